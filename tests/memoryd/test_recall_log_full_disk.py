"""Recall on a full disk answers; its recall log line is skipped, and a torn append is cut back
(recall/logfile.py). The first test runs on a real small tmpfs (root); the others fake the
failing write, so they run anywhere."""

import errno
import json
import logging

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.recall import logfile
from memoryd.recall.recaller import Recaller
from tests.reliability.small_disk import PAGE, fill_leaving, pad_to_cross, small_tmpfs, unfill

from .test_recaller import write_log

FILE = "memoryd.recall.logfile"


def _opened(root) -> tuple[Index, Recaller]:
    home = Home(root / "home")
    write_log(home, "mm-talk", ["the cat is called Miso", "Miso sleeps on the chair"])
    index = Index(home)
    index.open()
    index.catch_up_all()
    return index, Recaller(index)


def _said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == FILE]


def test_on_a_full_disk_recall_answers_and_the_log_keeps_whole_lines(caplog):
    caplog.set_level(logging.INFO, logger=FILE)
    with small_tmpfs(256 * PAGE) as folder:
        index, recaller = _opened(folder)
        try:
            recaller.recall("Miso", 2, session="mm-a")
            [month] = list(index.home.recalls.iterdir())
            # The next line crosses into a new page: on a full disk it is written in part.
            pad_to_cross(month, b'{"pad":"', b'"}\n', 100)
            before = month.read_bytes()
            fill_leaving(folder, 0)
            for _ in range(3):
                answer = recaller.recall("Miso", 2, session="mm-b")
                assert answer.text.startswith("[1] ")
                assert month.read_bytes() == before
            assert _said(caplog) == [
                f"{month}: cannot write recall lines (No space left on device); recalls answer "
                "without them until there is room"
            ]
            unfill(folder)
            recaller.recall("Miso", 2, session="mm-c")
        finally:
            recaller.close()
            index.close()
        lines = [json.loads(line) for line in month.read_bytes().splitlines()]
        assert [line.get("session") for line in lines] == ["mm-a", None, "mm-c"]
        assert _said(caplog)[1:] == [f"{month}: recall lines are written again (3 skipped)"]


def _torn_writes(monkeypatch, code: int) -> None:
    """os.write in the recall log writes half its bytes, then fails with code."""
    real = logfile.os.write

    def write(fd, data):
        real(fd, bytes(data[: len(data) // 2]))
        raise OSError(code, "fake")

    monkeypatch.setattr(logfile.os, "write", write)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EIO], ids=errno.errorcode.get)
def test_a_line_the_disk_refuses_is_cut_back_and_skipped(tmp_path, monkeypatch, caplog, code):
    caplog.set_level(logging.INFO, logger=FILE)
    index, recaller = _opened(tmp_path)
    try:
        recaller.recall("Miso", 2, session="mm-a")
        [month] = list(index.home.recalls.iterdir())
        before = month.read_bytes()
        with monkeypatch.context() as patched:
            _torn_writes(patched, code)
            for _ in range(2):
                assert recaller.recall("Miso", 2, session="mm-b").hits
            assert month.read_bytes() == before
        recaller.recall("Miso", 2, session="mm-c")
    finally:
        recaller.close()
        index.close()
    assert [json.loads(line)["session"] for line in month.read_bytes().splitlines()] == [
        "mm-a",
        "mm-c",
    ]
    assert len(_said(caplog)) == 2  # one when the lines stop, one when they start again


def test_a_torn_line_that_cannot_be_cut_back_at_once_is_cut_before_the_next(tmp_path, monkeypatch):
    index, recaller = _opened(tmp_path)
    try:
        recaller.recall("Miso", 2, session="mm-a")
        [month] = list(index.home.recalls.iterdir())
        before = month.read_bytes()
        with monkeypatch.context() as patched:
            _torn_writes(patched, errno.EIO)
            patched.setattr(logfile.os, "ftruncate", _fails)
            recaller.recall("Miso", 2, session="mm-b")
        assert month.read_bytes().startswith(before) and month.read_bytes() != before
        recaller.recall("Miso", 2, session="mm-c")
    finally:
        recaller.close()
        index.close()
    assert [json.loads(line)["session"] for line in month.read_bytes().splitlines()] == [
        "mm-a",
        "mm-c",
    ]


def _fails(*_args):
    raise OSError(errno.EIO, "Input/output error")


def test_an_error_that_is_no_full_disk_is_raised(tmp_path, monkeypatch):
    index, recaller = _opened(tmp_path)
    try:
        recaller.recall("Miso", 2, session="mm-a")
        _torn_writes(monkeypatch, errno.EBADF)
        with pytest.raises(OSError):
            recaller.recall("Miso", 2, session="mm-b")
    finally:
        monkeypatch.undo()
        recaller.close()
        index.close()
