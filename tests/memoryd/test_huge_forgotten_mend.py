"""memory/forgotten.jsonl grown far past what memoryd writes (a truncate typed by mistake, a
damaged disk: a sparse run of NUL bytes, no newline) is mended at start a block of whole lines at
a time, never read whole: the damage is said once, naming the file, and the keys the journal's
forget lines name are written back after it, so what was forgotten stays forgotten."""

import logging
import tracemalloc

from memoryd.journal import forgotten, forgottensaid, forgottenwrite
from tests.memoryd.owner_data_harness import Memoryd

HUGE = 256 << 20  # sparse: no disk used
HELD = 16 << 20  # what the mend may hold at its peak


def test_a_huge_file_is_mended_without_being_read_whole(tmp_path, caplog):
    md = Memoryd(tmp_path / "home")
    try:
        md.say("s-one", "The locker code is qz4711.", "Noted.")
        md.data("forget", id="session:s-one:0")
        path = forgotten.path(md.home)
        with open(path, "r+b") as f:
            f.truncate(0)
            f.truncate(HUGE)  # its lines lost, NUL bytes in their place
        tracemalloc.start()
        try:
            with caplog.at_level(logging.ERROR, logger=forgottensaid.__name__):
                forgottenwrite.mend(md.home)  # as server.prepare does at start
            held = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert held < HELD, held
        said = [r.getMessage() for r in caplog.records if r.name == forgottensaid.__name__]
        assert len(said) == 1, said
        assert said[0].startswith(f"{path}: line 1 damaged") and "kept forgotten" in said[0]
        assert "session:s-one:0" in forgotten.held(md.home)  # written back after the damage
        md.index.reindex()
        assert md.recall("locker").startswith("(no matches")
    finally:
        md.close()
