"""The recall log's month file removed or replaced while memoryd holds it open: the next line goes
to the file at the path (made anew when missing), said once in memoryd's log, so stats counts the
recalls; a path that no longer leads to a regular file skips the line, as a full disk does, and
recall answers (recall/logfile.py)."""

import json
import logging
import os

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.recall.recaller import Recaller

from .test_recaller import write_log

FILE = "memoryd.recall.logfile"


@pytest.fixture
def opened(tmp_path):
    home = Home(tmp_path / "home")
    write_log(home, "mm-talk", ["the cat is called Miso", "Miso sleeps on the chair"])
    index = Index(home)
    index.open()
    index.catch_up_all()
    recaller = Recaller(index)
    yield index, recaller
    recaller.close()
    index.close()


def _said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == FILE]


def _sessions(path) -> list[str]:
    return [json.loads(line)["session"] for line in path.read_bytes().splitlines()]


def _remove(month) -> None:
    month.unlink()


def _replace(month) -> None:
    other = month.with_name("other.tmp")
    other.write_bytes(month.read_bytes())
    os.replace(other, month)


@pytest.mark.parametrize("change", [_remove, _replace], ids=["removed", "replaced"])
def test_lines_go_to_the_file_at_the_path_after_it_changed(opened, caplog, change):
    index, recaller = opened
    caplog.set_level(logging.INFO, logger=FILE)
    recaller.recall("Miso", 2, session="mm-a")
    [month] = list(index.home.recalls.iterdir())
    kept = _sessions(month)
    change(month)
    for session in ("mm-b", "mm-c"):
        assert recaller.recall("Miso", 2, session=session).text.startswith("[1] ")
    after = [] if change is _remove else kept
    assert _sessions(month) == [*after, "mm-b", "mm-c"]
    found = "removed" if change is _remove else "replaced"
    assert _said(caplog) == [
        f"{month}: {found} while memoryd held it open; recall lines go to the file at that path"
        " from now"
    ]
    # The descriptor memoryd holds is of the file at the path, not of a removed one.
    held = os.fstat(recaller._log._fd)
    assert (held.st_dev, held.st_ino) == (month.stat().st_dev, month.stat().st_ino)


def test_a_folder_at_the_path_skips_the_line_and_recall_answers(opened, caplog):
    index, recaller = opened
    caplog.set_level(logging.INFO, logger=FILE)
    recaller.recall("Miso", 2, session="mm-a")
    [month] = list(index.home.recalls.iterdir())
    month.unlink()
    month.mkdir()
    for session in ("mm-b", "mm-c"):
        assert recaller.recall("Miso", 2, session=session).text.startswith("[1] ")
    month.rmdir()
    recaller.recall("Miso", 2, session="mm-d")
    assert _sessions(month) == ["mm-d"]
    said = _said(caplog)
    assert said == [
        f"{month}: replaced while memoryd held it open; recall lines go to the file at that path"
        " from now",
        f"{month}: cannot write recall lines (Is a directory); recalls answer without them until"
        " that is mended",
        f"{month}: recall lines are written again (2 skipped)",
    ]


def test_a_file_in_place_of_the_recalls_folder_skips_the_line_and_recall_answers(opened):
    """The log is best effort: recalls/ replaced by a file must not refuse every recall."""
    index, recaller = opened
    recaller.recall("Miso", 2, session="mm-a")
    recalls = index.home.recalls
    for month in recalls.iterdir():
        month.unlink()
    recalls.rmdir()
    recalls.write_text("not a folder")
    for session in ("mm-b", "mm-c"):
        assert recaller.recall("Miso", 2, session=session).text.startswith("[1] ")
    recalls.unlink()
    recaller.recall("Miso", 2, session="mm-d")
    [month] = list(recalls.iterdir())
    assert _sessions(month) == ["mm-d"]


def test_a_fifo_at_the_path_skips_the_line_and_recall_answers(opened, caplog):
    """A FIFO there (no reader): opened to write it fails at once, and the line is skipped as
    for a folder, never an internal error for the recall."""
    index, recaller = opened
    caplog.set_level(logging.INFO, logger=FILE)
    recaller.recall("Miso", 2, session="mm-a")
    [month] = list(index.home.recalls.iterdir())
    month.unlink()
    os.mkfifo(month)
    for session in ("mm-b", "mm-c"):
        assert recaller.recall("Miso", 2, session=session).text.startswith("[1] ")
    month.unlink()
    recaller.recall("Miso", 2, session="mm-d")
    assert _sessions(month) == ["mm-d"]
    assert _said(caplog)[1:] == [
        f"{month}: cannot write recall lines (a FIFO, not a regular file); recalls answer"
        " without them until that is mended",
        f"{month}: recall lines are written again (2 skipped)",
    ]
