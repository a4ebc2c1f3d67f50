"""A write recovered at start (renamed into place, journalled only at the next start) is
journalled once and for good: hand edits and starts after it never cut the entries it moved to
notes.md back out, and never journal it a second time."""

import pytest

from memoryd.memory import writeintent
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, args, fill, journal_lines, memory_path, new_store

CONSOLIDATE = {
    "action": "consolidate",
    "file": "memory",
    "entries": [{"old": "Kept A.", "keep": True}, {"old": "Moved B.", "move": True}],
}


def killed_before_its_journal_line(tmp_path, monkeypatch):
    """A consolidate killed after its rename, before its journal line: (memory.md's bytes
    before it, after it, the intent it left)."""
    store = new_store(tmp_path)
    fill(store, "memory", ["Kept A.", "Moved B."])
    memory = memory_path(store, "memory.md")
    before = memory.read_bytes()

    def crash(*_args, **_kwargs):
        raise SystemExit("killed after the rename")

    monkeypatch.setattr(store.journal, "append", crash)
    with pytest.raises(SystemExit):
        store.call(*loose_call(args(**CONSOLIDATE), **CLEAN))
    monkeypatch.undo()
    intent = writeintent.intent_path(store.home).read_bytes()
    return before, memory.read_bytes(), intent


def recovered(tmp_path) -> list[dict]:
    store = new_store(tmp_path)
    return [line for line in journal_lines(store) if line.get("recovered")]


@pytest.mark.parametrize("intent_left", [False, True], ids=["forgotten", "left-by-a-kill"])
def test_a_recovered_write_stands_whatever_hand_edits_follow(tmp_path, monkeypatch, intent_left):
    """intent_left: a second kill came between the recovered line and the intent's removal, so
    the intent is there at the next start although its write is journalled."""
    before, after, intent = killed_before_its_journal_line(tmp_path, monkeypatch)
    store = new_store(tmp_path)  # the start that journals the write as recovered
    assert [line["action"] for line in recovered(tmp_path)] == ["consolidate"]
    assert not writeintent.intent_path(store.home).exists()
    if intent_left:
        writeintent.intent_path(store.home).write_bytes(intent)
    notes = memory_path(store, "notes.md")
    notes_then = notes.read_bytes()
    assert b"Moved B." in notes_then
    memory = memory_path(store, "memory.md")

    memory.write_bytes(before)  # the owner puts memory.md back as it was before the write
    new_store(tmp_path)
    new_store(tmp_path)
    assert notes.read_bytes() == notes_then  # the journalled move stays in notes.md
    assert not writeintent.intent_path(store.home).exists()

    memory.write_bytes(after)  # and changes their mind: back to what the write left
    new_store(tmp_path)
    assert len(recovered(tmp_path)) == 1  # the owner's edit is theirs, not the session's
    last = journal_lines(store)[-1]
    assert last["action"] == "hand-edit" and last["session"] == "owner"
    assert notes.read_bytes() == notes_then


def test_an_intent_journalled_lines_ago_is_not_taken_back(tmp_path, monkeypatch):
    """The journal holds the intent's write, not as its last line but before the hand edits
    that came after it: the write stood, and notes.md keeps its entries."""
    before, after, intent = killed_before_its_journal_line(tmp_path, monkeypatch)
    store = new_store(tmp_path)
    memory = memory_path(store, "memory.md")
    for text in (b"Kept A.\n", after, before):  # three hand edits, each journalled at a start
        memory.write_bytes(text)
        new_store(tmp_path)
    notes = memory_path(store, "notes.md")
    notes_then = notes.read_bytes()
    writeintent.intent_path(store.home).write_bytes(intent)  # as a kill after its line leaves it
    new_store(tmp_path)
    assert notes.read_bytes() == notes_then
    assert not writeintent.intent_path(store.home).exists()
    assert len(recovered(tmp_path)) == 1
