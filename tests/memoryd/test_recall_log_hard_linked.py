"""A hard link made to the recall log's month while memoryd holds it open would take every
recall line, the search words among them, at its other name: the lines are skipped, said once,
recall answers, and once the link is gone the lines are written again (recall/logfile.py)."""

import logging
import os

from .test_recall_log_full_disk import FILE, _opened, _said


def test_lines_are_not_written_through_a_link_made_while_memoryd_runs(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=FILE)
    index, recaller = _opened(tmp_path)
    outside = tmp_path / "outside.jsonl"
    try:
        recaller.recall("Miso", 2, session="mm-a")
        [month] = list(index.home.recalls.iterdir())
        os.link(month, outside)
        held = outside.read_bytes()
        for _ in range(3):
            assert recaller.recall("Miso sleeps", 2, session="mm-b").text.startswith("[1] ")
        assert outside.read_bytes() == held
        [said] = _said(caplog)
        assert said.startswith(f"{month}: cannot write recall lines (a file with 2 hard links")
        assert said.endswith("recalls answer without them until that is mended")
        outside.unlink()
        recaller.recall("Miso", 2, session="mm-c")
    finally:
        recaller.close()
        index.close()
    assert b"mm-c" in month.read_bytes() and b"mm-b" not in month.read_bytes()
    assert _said(caplog)[-1] == f"{month}: recall lines are written again (3 skipped)"
