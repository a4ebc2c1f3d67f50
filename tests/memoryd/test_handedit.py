"""Hand edits: journalled as hand-edit, but never after a crash of memoryd's own
write between its rename and its journal append."""

import json

import pytest

from memoryd.journal.byfile import JournalIndex
from memoryd.memory import writeintent
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, args, fill, last_line, memory_path, new_store


def test_a_crash_between_rename_and_journal_is_journalled_as_the_write(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])

    def crash(*_args, **_kwargs):
        raise SystemExit("killed after the rename")

    monkeypatch.setattr(store.journal, "append", crash)
    with pytest.raises(SystemExit):
        store.call(*loose_call(args(action="add", file="memory", text="b"), **CLEAN))
    assert memory_path(store, "memory.md").read_text() == "a\n§\nb\n"

    restarted = new_store(tmp_path)
    restarted.ensure()
    last = last_line(restarted)
    assert last.action == "add" and last.recovered is True
    assert last.session == CLEAN["session"] and last.after == ["a", "b"]
    assert not [r for r in restarted.journal.records() if r.action == "hand-edit"]
    # Undo works on it like on any edit.
    restarted.undo(last.id)
    assert memory_path(store, "memory.md").read_text() == "a\n"


CONSOLIDATE = {
    "action": "consolidate",
    "file": "memory",
    "entries": [{"old": "Kept A.", "keep": True}, {"old": "Moved B.", "move": True}],
}
REMOVE = {"action": "remove", "file": "memory", "old": "Moved B."}


@pytest.mark.parametrize("fields", [CONSOLIDATE, REMOVE], ids=["consolidate", "remove"])
@pytest.mark.parametrize("torn", [False, True], ids=["whole", "torn"])
def test_a_kill_before_the_rename_takes_the_moved_entries_back(tmp_path, monkeypatch, fields, torn):
    """Killed after the entries leaving memory.md reached notes.md, before memory.md was
    replaced: the edit never happened, so notes.md is cut back to what it was."""
    store = new_store(tmp_path)
    fill(store, "memory", ["Kept A.", "Moved B."])
    notes = memory_path(store, "notes.md")
    notes_before = notes.read_bytes()
    lines_before = len(list(store.journal.records()))

    def killed(*_args, **_kwargs):
        if torn:  # the kill came in the middle of the append
            notes.write_bytes(notes.read_bytes()[: len(notes_before) + 9])
        raise SystemExit("killed before the rename")

    monkeypatch.setattr("memoryd.memory.store.replace_unchanged", killed)
    with pytest.raises(SystemExit):
        store.call(*loose_call(args(**fields), **CLEAN))
    assert notes.read_bytes() != notes_before  # the removals reached notes.md first
    monkeypatch.undo()

    restarted = new_store(tmp_path)
    restarted.ensure()
    assert notes.read_bytes() == notes_before
    assert memory_path(store, "memory.md").read_text() == "Kept A.\n§\nMoved B.\n"
    assert len(list(restarted.journal.records())) == lines_before
    assert not writeintent.intent_path(restarted.home).exists()
    # and the same edit, sent again, stands once
    restarted.call(*loose_call(args(**fields), **CLEAN))
    assert notes.read_text().count("Moved B.") == 1


def test_an_intent_that_does_not_match_is_a_hand_edit(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    memory_path(store, "memory.md").write_text("a\n§\nby hand\n")
    writeintent.intend(store.home, {"to": "memory.md", "before": ["a"], "after": ["a", "other"]})
    store.detect_hand_edits()
    last = last_line(store)
    assert last.action == "hand-edit" and last.after == ["a", "by hand"]


def test_nothing_is_journalled_when_the_entries_are_the_same(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a", "b"])
    count = len(store.journal.records())
    memory_path(store, "memory.md").write_bytes(b"\xef\xbb\xbfa\r\n\xc2\xa7\r\nb  \r\n")
    store.detect_hand_edits()
    assert len(store.journal.records()) == count


def test_the_last_after_is_read_incrementally_across_months(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", ["u"])
    edits = store.home.edits
    old = edits / "2020-01.jsonl"
    old.write_text(json.dumps({"id": "2020-01-01-0001", "to": "memory.md", "after": ["m"]}) + "\n")
    tail = JournalIndex(store.journal, tmp_path / "journal-index.json")
    assert tail.last_after("memory.md") == ["m"] and tail.last_after("user.md") == ["u"]
    fill(store, "memory", ["z"])
    assert tail.last_after("memory.md") == ["z"]  # after a hand edit back to [] and the add


def test_a_damaged_file_is_not_journalled(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    count = len(store.journal.records())
    memory_path(store, "memory.md").write_bytes(b"\xff\xfe")
    store.detect_hand_edits()
    assert len(store.journal.records()) == count


def test_a_hand_edit_that_cannot_be_journalled_is_logged_naming_both_files(
    tmp_path, monkeypatch, caplog
):
    """A full disk fails the journal's write on its descriptor, an OSError that names no file:
    the log line still names the file edited by hand and the journal month not written."""
    import errno

    import memoryd.journal.journal as journal_module

    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    count = len(store.journal.records())
    memory_path(store, "memory.md").write_text("a\n§\nby hand\n")

    def full(_path, _data):
        raise OSError(errno.ENOSPC, "No space left on device")  # as os.write raises it

    monkeypatch.setattr(journal_module, "append_bytes", full)
    with caplog.at_level("WARNING", logger="memoryd.memory.store"):
        store.detect_hand_edits()
    month = store.home.edits_month(journal_module.utc(store.now()))
    said = [r.getMessage() for r in caplog.records if "journalled now" in r.getMessage()]
    assert said == [
        f"memory.md: edited outside memoryd: a hand edit cannot be journalled now ({month}: No"
        " space left on device); it is tried again at the next write or start"
    ]
    assert len(store.journal.records()) == count
    monkeypatch.undo()
    store.detect_hand_edits()  # room again: journalled then
    last = last_line(store)
    assert last.action == "hand-edit" and last.after == ["a", "by hand"]


def test_the_hand_edit_log_line_counts_one_entry_in_the_singular(tmp_path, caplog):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    memory_path(store, "memory.md").write_text("a\n§\nby hand\n")
    with caplog.at_level("INFO", logger="memoryd.memory"):
        store.detect_hand_edits()
    said = [r.getMessage() for r in caplog.records if "edited outside memoryd (" in r.getMessage()]
    assert len(said) == 1 and "(1 entry before, 2 now)" in said[0], said
