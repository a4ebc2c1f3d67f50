"""A forget killed after its first writes and before it scrubbed the journal and the exports, whose
record (memory/.forgetting.json) is then removed (a hidden file that looks like junk): the
journal's older lines and the export still hold the text, and memoryd must still say the forget
stopped part way, at start and in stats, and finish it when run again by the text's words. A
home whose only forget stopped before it made forgotten.jsonl is said as that, not as a file
lost."""

import json
import logging

import pytest

from memoryd.data import erasing, unfinished
from memoryd.errors import AdminRefused
from memoryd.journal import forgotten, forgottenwrite
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "My PIN is 4417."
OTHER = "Beta entry."
NOTE = "The locker code is 2291."


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _killed(*_args, **_kwargs):
    raise Killed


def _held(m: Memoryd, text: str) -> list[str]:
    """The journal months and exports that still hold text."""
    paths = [*m.store.journal.month_files(), *(m.home.root / "backups").glob("export-*")]
    return [p.name for p in paths if text.encode() in p.read_bytes()]


def _stopped_then_record_removed(tmp_path, ref: str, text: str) -> Memoryd:
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": SECRET})
    m.call({"action": "add", "file": "memory", "text": OTHER})
    m.call({"action": "note", "text": NOTE})
    m.data("export")
    real = erasing.scrub_everywhere
    erasing.scrub_everywhere = _killed  # after memory.md and the journal line, before the scrub
    try:
        with pytest.raises(Killed):
            m.admin("forget", {"id": ref})
    finally:
        erasing.scrub_everywhere = real
    m.close()
    unfinished.path_of(m.home).unlink()
    assert len(_held(m, text)) == 2  # the journal's month and the export
    return Memoryd(tmp_path / "home")


@pytest.mark.parametrize(
    "ref, text, what",
    [
        (SECRET, SECRET, "an entry of memory.md"),
        ("memory.md:1", SECRET, "an entry of memory.md"),
        ("note:0", NOTE, "a note of notes.md"),
    ],
)
def test_the_start_says_it_and_stats_names_it_and_forget_finishes_it(
    tmp_path, caplog, ref, text, what
):
    m = _stopped_then_record_removed(tmp_path, ref, text)
    try:
        with caplog.at_level(logging.INFO):
            forgottenwrite.mend(m.home)  # as the start does
        said = [
            r.getMessage()
            for r in caplog.records
            if r.levelno >= logging.WARNING and r.name.startswith("memoryd.journal")
        ]
        assert len(said) == 1 and f"a forget of {what} stopped part way" in said[0]
        assert ".forgetting.json had been removed: made again" in said[0]
        assert text not in said[0]  # the log never holds the text
        assert unfinished.path_of(m.home).exists()  # written back: later starts read it
        stats = m.admin("stats", {"days": 30})
        assert f"a forget of {what} stopped part way; its text may still be in " in stats
        # stats names the same places as the start's line, the file the text is in first
        where = said[0].split("its text may still be in ", 1)[1].split(": run", 1)[0]
        assert f"may still be in {where}: run bxctl memory forget {text!r} again" in stats
        assert where.startswith("memory.md" if "memory.md" in what else "notes.md")
        with pytest.raises(AdminRefused, match="stopped part way is not finished"):
            m.admin("forget", {"id": OTHER})
        assert "forgot" in json.loads(m.admin("forget", {"id": text}))["message"]
        assert _held(m, text) == [] and not unfinished.path_of(m.home).exists()
        assert "stopped part way" not in m.admin("stats", {"days": 30})
    finally:
        m.close()


def test_a_record_removed_while_memoryd_runs_is_still_said_by_stats(tmp_path):
    m = _stopped_then_record_removed(tmp_path, SECRET, SECRET)
    try:  # no start's mend: stats asks unfinished.read, which finds it from the journal
        stats = m.admin("stats", {"days": 30})
        assert "stopped part way; its text may still be in memory.md, the journal" in stats
        assert f"or an export: run bxctl memory forget {SECRET!r} again" in stats
        assert not unfinished.path_of(m.home).exists()  # a read writes nothing
    finally:
        m.close()


def test_a_finished_forget_is_not_taken_for_one_stopped(tmp_path):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "add", "file": "memory", "text": SECRET})
        m.admin("forget", {"id": SECRET})
        m.call({"action": "add", "file": "memory", "text": SECRET})  # written again since
        assert unfinished.read(m.home) is None
        forgotten.path(m.home).unlink()  # even with its listing gone, the older lines hold none
        assert unfinished.read(m.home) is None
    finally:
        m.close()


def test_a_first_forget_stopped_before_it_made_forgotten_jsonl_is_said_as_that(
    tmp_path, caplog, monkeypatch
):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": SECRET})
    monkeypatch.setattr(forgottenwrite, "add", _killed)  # after the scrub, before it lists anything
    with pytest.raises(Killed):
        m.admin("forget", {"id": SECRET})
    monkeypatch.undo()
    m.close()
    unfinished.path_of(m.home).unlink()
    m = Memoryd(tmp_path / "home")
    try:
        assert not forgotten.path(m.home).exists()
        with caplog.at_level(logging.INFO):
            forgottenwrite.mend(m.home)
        (said,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert said.levelno == logging.WARNING and "forgotten.jsonl is missing" in said.getMessage()
        assert "forget lines are of one forget" in said.getMessage()
        assert forgotten.path(m.home).exists()  # its digest written back
    finally:
        m.close()


def test_an_export_still_holding_the_text_tells_it_when_the_journal_no_longer_does(
    tmp_path, caplog, monkeypatch
):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": SECRET})
    m.data("export")
    monkeypatch.setattr(erasing.exportfiles, "scrub_exports", _killed)  # after the journal's
    with pytest.raises(Killed):
        m.admin("forget", {"id": SECRET})
    monkeypatch.undo()
    m.close()
    unfinished.path_of(m.home).unlink()
    m = Memoryd(tmp_path / "home")
    try:
        (left,) = _held(m, SECRET)  # the journal scrubbed, the export not
        assert left.startswith("export-")
        with caplog.at_level(logging.INFO):
            forgottenwrite.mend(m.home)
        assert any("stopped part way" in r.getMessage() for r in caplog.records)
        assert "forgot" in json.loads(m.admin("forget", {"id": SECRET}))["message"]
        assert _held(m, SECRET) == []
    finally:
        m.close()
