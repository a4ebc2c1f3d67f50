"""A forget of a text held in both memory.md and user.md writes a journal line per file, then lists
the forget in forgotten.jsonl: while it runs, the first line's digest is missing from the file, and
memoryd must not log that the file is missing or lost lines (nobody touched it). A line really lost
from the file (emptied, a line deleted by hand) is still said, and a forget killed after both of
its lines is said at the next start as a forget to run again, not as lines lost."""

import json
import logging

import pytest

from memoryd.journal import forgetread, forgotten, forgottenwrite
from tests.memoryd.owner_data_harness import Memoryd

TEXT = "Same text in both files."
NOTE = "The old door code is 4411."
SAID = "forgottensaid"


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _killed(*_args, **_kwargs):
    raise Killed


def _home(tmp_path, earlier: bool, records: bool) -> Memoryd:
    """memory.md and user.md each holding TEXT (and session records saying it, when records), and
    an earlier forget of a note when earlier."""
    m = Memoryd(tmp_path / "home")
    for file in ("memory", "user"):
        m.call({"action": "add", "file": file, "text": TEXT})
    if records:
        m.say("s-said", TEXT, "Noted.")
    if earlier:
        m.call({"action": "note", "text": NOTE})
        json.loads(m.admin("search", {"query": "door", "json": True}))
        m.admin("forget", {"id": "note:0"})
    m.admin("stats", {"days": 30, "json": False})  # forget user.md:1 names what stats printed
    return m


def _said(caplog) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if SAID in r.name and r.levelno >= logging.WARNING
    ]


def _started(m: Memoryd, caplog) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        forgottenwrite.mend(m.home)  # as the start does, before the writer runs
    return _said(caplog)


@pytest.mark.parametrize("records", [False, True], ids=["no records", "said in a session"])
@pytest.mark.parametrize("earlier", [False, True], ids=["first forget", "later forget"])
def test_a_forget_of_a_text_in_two_files_logs_no_lost_lines(tmp_path, caplog, earlier, records):
    m = _home(tmp_path, earlier, records)
    try:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            m.admin("forget", {"id": "user.md:1"})
            forgotten.listed(m.home)  # a reader after it
        assert _said(caplog) == []
        assert TEXT not in m.home.memory_file("memory.md").read_text()
        assert TEXT not in m.home.memory_file("user.md").read_text()
    finally:
        m.close()
    journal = forgetread.forgets(m.home)
    assert len(journal.newest()) == 2  # a journal line per file, both listed in the file
    assert journal.texts <= forgotten.held_texts(m.home)
    assert journal.keys <= forgotten.held(m.home)
    assert _started(m, caplog) == []


def _drop_lines(m: Memoryd, drop) -> None:
    where = forgotten.path(m.home)
    lines = where.read_text().splitlines()
    where.write_text("".join(line + "\n" for line in lines if not drop(json.loads(line))))


def _forgot_both(tmp_path, earlier: bool) -> Memoryd:
    m = _home(tmp_path, earlier, records=False)
    try:
        m.admin("forget", {"id": "user.md:1"})
    finally:
        m.close()
    return m


def test_a_line_of_it_removed_by_hand_is_said_at_start(tmp_path, caplog):
    m = _forgot_both(tmp_path, earlier=False)
    first = min(f.edit for f in forgetread.forgets(m.home).newest())
    _drop_lines(m, lambda row: row.get("edit") == first)
    [line] = _started(m, caplog)
    assert "lacks 1 key or digest" in line and "lines lost: the file emptied or edited" in line
    assert forgetread.forgets(m.home).texts <= forgotten.held_texts(m.home)


def test_an_earlier_forgets_line_removed_is_said_by_the_reader(tmp_path, caplog):
    m = _forgot_both(tmp_path, earlier=True)
    newest = {f.edit for f in forgetread.forgets(m.home).newest()}
    _drop_lines(m, lambda row: "digest" in row and row["edit"] not in newest)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        forgotten.listed(m.home)
    [line] = _said(caplog)
    assert "lacks 1 key or digest" in line and "lines lost" in line


def test_the_file_emptied_is_said_at_start(tmp_path, caplog):
    m = _forgot_both(tmp_path, earlier=False)
    forgotten.path(m.home).write_bytes(b"")
    [line] = _started(m, caplog)
    assert "lacks 2 keys or digests" in line and "lines lost" in line


@pytest.mark.parametrize("earlier", [False, True], ids=["first forget", "later forget"])
def test_a_forget_killed_after_both_lines_is_said_as_stopped(
    tmp_path, monkeypatch, caplog, earlier
):
    m = _home(tmp_path, earlier, records=False)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(forgottenwrite, "add", _killed)
            with pytest.raises(Killed):
                m.admin("forget", {"id": "user.md:1"})
    finally:
        m.close()
    [line] = _started(m, caplog)
    assert "is missing" not in line and "lines lost" not in line
    assert line.startswith("a forget of user.md:1 (") and "stopped part way" in line
    assert "2 keys or digests of it not yet listed" in line
    assert forgetread.forgets(m.home).texts <= forgotten.held_texts(m.home)
