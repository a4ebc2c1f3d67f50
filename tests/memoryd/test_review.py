"""Review mode: writes to memory.md and user.md wait in pending.jsonl; pending, accept, reject."""

import json

import pytest

from memoryd.errors import AdminRefused, EditRefused, UntrustedSession
from memoryd.memory import entries, notes
from memoryd.memory.notewrites import NOTED
from memoryd.memory.review import waiting_sentence
from memoryd.memory.store import UNTRUSTED_ADD
from tests.callargs import loose_call

from .store_helpers import (
    CLEAN,
    TAINTED,
    args,
    journal_lines,
    last_line,
    memory_path,
    new_store,
    owner,
    snapshot,
)


def pending_lines(store):
    path = memory_path(store, "pending.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_review_off_writes_at_once(tmp_path):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    assert entries.parse(memory_path(store, "memory.md").read_text()) == ["a"]
    assert not memory_path(store, "pending.jsonl").exists()
    assert owner(store, "pending") == "review is off; no edits are waiting for review"


def test_review_on_stages_a_write_and_says_it_waits(tmp_path):
    store = new_store(tmp_path, review=True)
    before = memory_path(store, "memory.md").read_bytes()
    answer = store.call(*loose_call(args(action="add", file="memory", text="  a fact  "), **CLEAN))
    assert answer == waiting_sentence("memory.md", "p-2026-09-24-0001")
    assert "waiting for the owner" in answer and "p-2026-09-24-0001" in answer
    assert memory_path(store, "memory.md").read_bytes() == before
    assert journal_lines(store) == []
    [item] = pending_lines(store)
    assert item == {
        "id": "p-2026-09-24-0001",
        "time": "2026-09-24T21:02:11Z",
        "session": CLEAN["session"],
        "call": CLEAN["call_id"],
        "taint": "private",
        "untrusted": False,
        "action": "add",
        "file": "memory.md",
        "args": {"action": "add", "file": "memory", "text": "  a fact  "},
    }
    assert owner(store, "pending") == (
        f"p-2026-09-24-0001  2026-09-24T21:02:11Z  {CLEAN['session']}  add  memory.md\n"
        '  text: "  a fact  "'
    )


def test_review_on_still_refuses_what_would_fail_now(tmp_path):
    store = new_store(tmp_path, review=True)
    before = snapshot(store)
    with pytest.raises(EditRefused, match="matches no entry"):
        store.call(*loose_call(args(action="remove", file="user", old="nothing"), **CLEAN))
    assert snapshot(store) == before


def test_notes_are_never_staged(tmp_path):
    store = new_store(tmp_path, review=True)
    assert store.call(*loose_call(args(action="note", text="n"), **CLEAN)) == NOTED
    assert (
        store.call(*loose_call(args(action="add", file="memory", text="t"), **TAINTED))
        == UNTRUSTED_ADD
    )
    with pytest.raises(UntrustedSession):
        store.call(*loose_call(args(action="remove", file="memory", old="t"), **TAINTED))
    assert len(notes.parse(memory_path(store, "notes.md").read_bytes())) == 2
    assert not memory_path(store, "pending.jsonl").exists()
    assert owner(store, "pending") == "no edits are waiting for review"


def test_accept_applies_with_the_same_checks_and_is_journalled(tmp_path):
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="user", text="Name: Sam"), **CLEAN))
    answer = store.accept("p-2026-09-24-0001")
    assert answer == (
        "accepted p-2026-09-24-0001 as edit 2026-09-24-0001: user.md updated (9 of 1,375 "
        "characters); it takes effect in the next session"
    )
    assert entries.parse(memory_path(store, "user.md").read_text()) == ["Name: Sam"]
    [line] = journal_lines(store)
    assert (line["action"], line["pending"], line["requested"], line["session"], line["call"]) == (
        "accept",
        "p-2026-09-24-0001",
        "add",
        CLEAN["session"],
        CLEAN["call_id"],
    )
    assert (line["file"], line["to"], line["before"], line["after"]) == (
        "user.md",
        "user.md",
        [],
        ["Name: Sam"],
    )
    assert pending_lines(store) == []
    assert owner(store, "pending") == "no edits are waiting for review"
    with pytest.raises(AdminRefused, match="no edit p-2026-09-24-0001 is waiting"):
        store.accept("p-2026-09-24-0001")
    store.undo("2026-09-24-0001")  # an accept is an edit of its file
    assert memory_path(store, "user.md").read_bytes() == b""


def test_accept_is_checked_against_the_file_as_it_is_then(tmp_path):
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    memory_path(store, "memory.md").write_text("a\n")  # the owner added the same entry by hand
    store.detect_hand_edits()  # journalled as a hand edit; the refused accept changes nothing more
    assert last_line(store).action == "hand-edit"
    before = snapshot(store)
    with pytest.raises(AdminRefused) as e:
        store.accept("p-2026-09-24-0001")
    assert str(e.value) == (
        "refused: p-2026-09-24-0001 cannot be applied to memory.md as it is now: "
        "memory.md already holds this entry"
    )
    assert snapshot(store) == before
    assert "p-2026-09-24-0001" in owner(store, "pending")


def test_two_staged_edits_second_goes_stale_after_the_first(tmp_path):
    store = new_store(tmp_path, review=False)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    store.review_on = True
    store.call(*loose_call(args(action="replace", file="memory", old="a", text="b"), **CLEAN))
    store.call(*loose_call(args(action="remove", file="memory", old="a"), **CLEAN))
    store.accept("p-2026-09-24-0001")
    with pytest.raises(AdminRefused, match='old "a" matches no entry of memory.md as it is now'):
        store.accept("p-2026-09-24-0002")
    assert store.reject("p-2026-09-24-0002") == (
        "rejected p-2026-09-24-0002 (edit 2026-09-24-0003); memory.md is unchanged"
    )


def test_accept_of_a_consolidate_moves_entries_with_the_session_of_the_call(tmp_path):
    store = new_store(tmp_path, review=True)
    store.review_on = False
    store.call(*loose_call(args(action="add", file="memory", text="old fact"), **CLEAN))
    store.review_on = True
    store.call(
        *loose_call(
            args(action="consolidate", file="memory", entries=[{"old": "old fact", "move": True}]),
            **CLEAN,
        ),
    )
    assert '    {"old": "old fact", "move": true}' in owner(store, "pending")
    store.accept("p-2026-09-24-0001")
    [moved] = notes.parse(memory_path(store, "notes.md").read_bytes())
    assert (moved.kind, moved.session, moved.text) == ("moved", CLEAN["session"], "old fact")
    assert memory_path(store, "memory.md").read_bytes() == b""


def test_reject_discards_and_is_journalled(tmp_path):
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    store.call(*loose_call(args(action="add", file="memory", text="b"), **CLEAN))
    before = memory_path(store, "memory.md").read_bytes()
    assert store.reject("p-2026-09-24-0001") == (
        "rejected p-2026-09-24-0001 (edit 2026-09-24-0001); memory.md is unchanged"
    )
    assert memory_path(store, "memory.md").read_bytes() == before
    [line] = journal_lines(store)
    assert (line["action"], line["pending"], line["requested"], line["to"]) == (
        "reject",
        "p-2026-09-24-0001",
        "add",
        None,
    )
    assert [item["id"] for item in pending_lines(store)] == ["p-2026-09-24-0002"]
    assert owner(store, "log", "1").endswith(
        "reject  memory.md unchanged (pending p-2026-09-24-0001, add)"
    )
    with pytest.raises(AdminRefused, match="rejected a pending edit; nothing changed"):
        store.undo("2026-09-24-0001")


def test_pending_ids_are_never_reused(tmp_path):
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    store.reject("p-2026-09-24-0001")
    store.call(*loose_call(args(action="add", file="memory", text="b"), **CLEAN))
    assert [item["id"] for item in pending_lines(store)] == ["p-2026-09-24-0002"]


def test_a_pending_line_the_journal_already_resolved_is_not_listed(tmp_path):
    """A crash between the journal line and the rewrite of pending.jsonl cannot apply twice."""
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    stale = memory_path(store, "pending.jsonl").read_bytes()
    store.accept("p-2026-09-24-0001")
    memory_path(store, "pending.jsonl").write_bytes(stale)
    assert owner(store, "pending") == "no edits are waiting for review"
    with pytest.raises(AdminRefused, match="no edit p-2026-09-24-0001 is waiting"):
        store.accept("p-2026-09-24-0001")


@pytest.mark.parametrize("pending_id", ["2026-09-24-0001", "p-x", "../pending", ""])
def test_bad_pending_ids_are_refused(tmp_path, pending_id):
    store = new_store(tmp_path, review=True)
    for action in (store.accept, store.reject):
        with pytest.raises(AdminRefused, match="is not a pending id"):
            action(pending_id)


def test_a_damaged_pending_line_is_refused_not_applied(tmp_path):
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    item = pending_lines(store)[0]
    item["args"] = {"action": "add", "file": "soul", "text": "x"}
    memory_path(store, "pending.jsonl").write_text(json.dumps(item) + "\n")
    with pytest.raises(AdminRefused, match="pending p-2026-09-24-0001 is damaged"):
        store.accept("p-2026-09-24-0001")


@pytest.mark.parametrize("command", ["accept", "reject"])
def test_a_pending_line_that_does_not_parse_is_named_and_kept(tmp_path, command):
    """A quote lost to a bad disk or an editor: pending says the line is there, damaged;
    accept and reject of its id name the file and line, never "not waiting"; and a rewrite of
    pending.jsonl for another item keeps it as it was, for the owner to mend."""
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    store.call(*loose_call(args(action="add", file="memory", text="b"), **CLEAN))
    path = memory_path(store, "pending.jsonl")
    first, second = path.read_bytes().splitlines()
    torn = first.replace(b'"time": "', b'"time": ', 1)
    path.write_bytes(torn + b"\n" + second + b"\n")
    listed = owner(store, "pending")
    assert "p-2026-09-24-0002" in listed and "  add  memory.md" in listed
    assert listed.splitlines()[-1] == (
        f"(1 damaged line of {path} not listed (p-2026-09-24-0001), line 1: it does not parse;"
        " mend or delete it)"
    )
    with pytest.raises(AdminRefused) as refused:
        owner(store, command, "p-2026-09-24-0001")
    assert str(refused.value) == (
        f"refused: edit p-2026-09-24-0001's line in {path} (line 1) is damaged: it does not "
        "parse, so it can be neither accepted nor rejected; mend that line (memoryd's log says "
        "what is wrong with it) or delete it"
    )
    owner(store, command, "p-2026-09-24-0002")  # pending.jsonl rewritten without it
    assert path.read_bytes() == torn + b"\n"
