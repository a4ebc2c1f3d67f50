"""What bxctl memory show and log say of an edit is what happened, in text and in JSON alike."""

import json

import pytest

from tests.callargs import loose_call
from tests.memoryd.store_helpers import (
    CLEAN,
    TAINTED,
    Clock,
    args,
    fill,
    memory_path,
    new_store,
    owner,
)

SECRET = {"session": "mm-secret001", "call_id": "call-9", "taint": "secret", "untrusted": False}


@pytest.mark.parametrize(
    ("call", "caller", "entries_line"),
    [
        (
            {"action": "add", "file": "memory", "text": "The release moved to March."},
            TAINTED,
            "entries   memory.md unchanged; saved as a note in notes.md (untrusted)",
        ),
        (
            {"action": "add", "file": "user", "text": "Robin likes tea."},
            SECRET,
            "entries   user.md unchanged; saved as a note in notes.md (secret)",
        ),
        (
            {"action": "add", "file": "user", "text": "Robin likes tea."},
            {**SECRET, "untrusted": True},
            "entries   user.md unchanged; saved as a note in notes.md (secret, untrusted)",
        ),
        (
            {"action": "note", "text": "The NAS is in the hall."},
            CLEAN,
            "entries   none changed; a note in notes.md",
        ),
    ],
)
def test_show_of_an_edit_that_became_a_note_shows_the_note_not_an_added_entry(
    tmp_path, call, caller, entries_line
):
    store = new_store(tmp_path)
    fill(store, "memory", ["kept"])
    store.call(*loose_call(json.dumps(call), **caller))
    text = owner(store, "show", {"id": "2026-09-24-0002"})
    lines = text.splitlines()
    assert entries_line in lines
    assert not any(line.startswith("+ added") for line in lines)
    assert [line for line in lines if line.startswith("+ noted")] == [
        f"+ noted      {call['text']}"
    ]
    assert memory_path(store, "memory.md").read_text() == "kept\n"
    shown = json.loads(owner(store, "show", {"id": "2026-09-24-0002", "json": True}))
    assert shown["changes"] == [{"change": "noted", "entry": call["text"], "to": "notes.md"}]


def test_show_of_an_edit_of_a_file_still_counts_its_entries(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a", "b"])
    text = owner(store, "show", {"id": "2026-09-24-0002"})
    assert "entries   1 before, 2 after" in text.splitlines()
    assert "+ added      b" in text.splitlines()


def _every_kind_of_edit(tmp_path):
    clock = Clock()
    store = new_store(tmp_path, review=True, clock=clock)
    store.call(*loose_call(args(action="note", text="a note"), **CLEAN))  # 0001
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))  # staged
    store.call(*loose_call(args(action="add", file="user", text="b"), **CLEAN))  # staged
    owner(store, "accept", "p-2026-09-24-0001")  # 0002
    owner(store, "reject", "p-2026-09-24-0002")  # 0003
    owner(store, "undo", "2026-09-24-0002")  # 0004
    owner(store, "promote", {"ref": "note:0", "file": "user"})  # 0005
    memory_path(store, "memory.md").write_text("by hand\n")
    store.detect_hand_edits()  # 0006
    store.call(*loose_call(args(action="add", file="memory", text="x"), **TAINTED))  # 0007
    return store


def test_log_json_names_the_same_session_and_file_as_the_text(tmp_path):
    store = _every_kind_of_edit(tmp_path)
    text_lines = owner(store, "log", "20").splitlines()
    items = json.loads(owner(store, "log", {"n": 20, "json": True}))["edits"]
    assert len(text_lines) == len(items) == 7
    for line, item in zip(text_lines, items, strict=True):
        edit_id, time, session, action, where = line.split("  ", 4)
        assert (item["id"], item["time"], item["session"]) == (edit_id, time, session)
        assert (item["action"], item["where"]) == (action, where)
    assert [item["session"] for item in items if item["action"] == "undo"] == ["owner"]


def test_show_json_names_the_same_session_as_the_text(tmp_path):
    store = _every_kind_of_edit(tmp_path)
    for number in range(1, 8):
        edit_id = f"2026-09-24-{number:04d}"
        text = owner(store, "show", {"id": edit_id})
        session_line = next(ln for ln in text.splitlines() if ln.startswith("session"))
        shown = json.loads(owner(store, "show", {"id": edit_id, "json": True}))
        assert session_line.split()[1] == shown["session"]
