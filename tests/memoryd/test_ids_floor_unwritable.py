"""index/ids-handed-out.json is the spare copy of the last ids handed out (memory/.ids.json is the
record). A folder left where it should be (a hand command, a restore tool) makes it one that can
never be written: memoryd still hands out unique ids, and says so once, naming the file, rather
than keep a spare the owner believes is there."""

import logging

from memoryd.home import Home
from memoryd.journal import ids

DAY = "2026-09-24"


def test_a_floor_that_cannot_be_written_is_said_once_naming_it(tmp_path, caplog):
    home = Home(tmp_path / "home")
    home.memory.mkdir(parents=True)
    home.index_dir.mkdir(parents=True)
    floor = home.index_dir / ids.FLOOR_NAME
    floor.mkdir()
    issued = ids.Issued(home)
    with caplog.at_level(logging.WARNING, logger="memoryd.journal.ids"):
        for n in range(1, 4):
            issued.note("edit", f"{DAY}-{n:04d}")
    said = [r.getMessage() for r in caplog.records if str(floor) in r.getMessage()]
    assert len(said) == 1, said
    assert "cannot be written" in said[0]
    assert ids.Issued(home).last("edit") == f"{DAY}-0003"  # the record holds them
    assert floor.is_dir()
