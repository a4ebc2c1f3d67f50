"""A power cut tears the recall log's last line (its fsync lags the write): the next recall's line
starts on a line of its own, never glued onto the torn one, so the recall answered after the
restart is in the log (and in stats' counts); the torn line alone is lost."""

import json

import pytest

from memoryd.recall import logfile

from .test_recall_log_full_disk import _opened


@pytest.mark.parametrize("cut", [1, 2, 25])
def test_the_line_after_a_torn_one_starts_on_its_own_line(tmp_path, cut):
    index, recaller = _opened(tmp_path)
    try:
        recaller.recall("Miso", 2, session="mm-a")
        recaller.recall("Miso", 2, session="mm-b")
    finally:
        recaller.close()
        index.close()
    [month] = list(index.home.recalls.iterdir())
    month.write_bytes(month.read_bytes()[:-cut])  # the power cut
    index, recaller = _opened(tmp_path)  # memoryd starts again
    try:
        recaller.recall("Miso", 2, session="mm-c")
        recaller.recall("Miso", 2, session="mm-d")
    finally:
        recaller.close()
        index.close()
    lines = month.read_bytes().split(b"\n")
    assert lines[-1] == b""
    whole = []
    for line in lines[:-1]:
        try:
            whole.append(json.loads(line)["session"])
        except ValueError:
            continue
    kept = ["mm-a", "mm-b"] if cut == 1 else ["mm-a"]  # only the newline lost: the line is whole
    assert whole == [*kept, "mm-c", "mm-d"]
    assert logfile.RecallLog.__name__  # the writer under test
