"""A file memoryd reads at start grown far past what memoryd writes (a truncate typed by mistake, a
damaged disk: a sparse run of NUL bytes) is never read whole: a saved copy under index/ over its
bound is damaged and made again from the journal, and forgotten.jsonl and labels.jsonl are read a
block of whole lines at a time, a line longer than any memoryd writes said once and passed over.
What the other lines say stands: a key stays forgotten, a label never gets laxer."""

import logging
import os
import tracemalloc

import pytest

from memoryd.home import Home, ensure_dir
from memoryd.journal import forgetread, forgetsaved, forgotten, forgottensaid, heldids, heldsaved
from memoryd.trust import risen
from tests.memoryd.owner_data_harness import Memoryd

HUGE = 256 << 20  # sparse: no disk used
HELD = 16 << 20  # what a read may hold at its peak


def a_home(tmp_path) -> Home:
    home = Home(tmp_path / "home")
    ensure_dir(home.memory)
    return home


def grown(path, size: int = HUGE) -> None:
    """path's lines, then NUL bytes up to size, with no newline (what truncate -s leaves)."""
    with open(path, "ab") as f:
        f.truncate(size)


def peak(read):
    """read()'s answer, and the most memory Python held while it ran."""
    tracemalloc.start()
    try:
        answer = read()
        return answer, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def logged(caplog, level=logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= level]


def test_a_huge_forgotten_file_keeps_its_keys_and_says_its_damage_once(tmp_path, caplog):
    home = a_home(tmp_path)
    where = forgotten.path(home)
    one, two = '{"key": "session:s1:0"}\n', '{"key": "note:3"}\n'
    # a long line with its newline between two keys, then a long last line without one
    where.write_bytes(one.encode() + b"\0" * (3 << 20) + b"\n" + two.encode())
    grown(where)
    with caplog.at_level(logging.ERROR, logger=forgottensaid.__name__):
        listed, held = peak(lambda: forgotten.listed(home))
        assert forgotten.listed(home) == listed  # said once
    assert listed == {"session:s1:0", "note:3"}
    assert held < HELD, held
    said = logged(caplog, logging.ERROR)
    assert len(said) == 1, said
    assert said[0].startswith(f"{where}: lines 2, 4 damaged") and "kept forgotten" in said[0]


def test_a_huge_labels_file_keeps_its_labels_and_reads_on_past_it(tmp_path, caplog):
    home = a_home(tmp_path)
    where = risen.path(home)
    where.write_text('{"session": "web1", "class": "private", "untrusted": true}\n')
    grown(where)
    with caplog.at_level(logging.WARNING, logger=risen.__name__):
        label, held = peak(lambda: risen.label(home, "web1"))
        assert label == ("private", True)
        assert held < HELD, held
        risen.rise(home, "web2", ("secret", False))  # on a line of its own after the damage
        risen._homes.clear()  # as a new memoryd reads it
        assert risen.label(home, "web1") == ("private", True)
        assert risen.label(home, "web2") == ("secret", False)
    said = logged(caplog)
    assert len(said) == 2, said  # once per reading memoryd
    assert said[0].startswith(f"{where}: line 2 is longer than any label memoryd writes")
    assert "never taken laxer" in said[0]


@pytest.mark.parametrize("saved", [heldsaved, forgetsaved])
def test_a_huge_saved_copy_is_damaged_and_made_again(tmp_path, caplog, saved):
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "add", "file": "memory", "text": "An entry."})
    finally:
        md.close()
    home, reader = md.home, heldids if saved is heldsaved else forgetread
    where = home.index_dir / saved.NAME
    grown(where)
    reader._journals.pop(home.edits, None)  # as a new memoryd, which reads the copy at start
    with caplog.at_level(logging.WARNING, logger=saved.log.name):
        _, held = peak(lambda: reader.keep_saved(home))
    assert held < HELD, held
    said = logged(caplog)
    assert len(said) == 1, said
    assert said[0].startswith(f"{where}: {HUGE:,} bytes, over its bound of")
    assert "taken as damaged" in said[0]
    assert 0 < os.path.getsize(where) < 4096
    reader._journals.pop(home.edits, None)
    assert saved.load(home)  # the copy made again is read at the next start
