"""Class is taint too: a session above [index] max_class never writes identity,
and entries leaving identity keep the class of the session that wrote them in."""

import json

import pytest

from memoryd.errors import AdminRefused, UntrustedSession
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.memory.store import UNTRUSTED_ADD, MemoryStore, untrusted_sentence
from proto.labels import Label
from tests.callargs import loose_call
from tests.recalling import recall_on

from .store_helpers import (
    CLEAN,
    SOUL_STARTER,
    Clock,
    args,
    last_line,
    memory_path,
    owner,
    snapshot,
)
from .test_service import memoryd  # noqa: F401  (the fixture)

SECRET = {"session": "mm-secret001", "call_id": "call-9", "taint": "secret", "untrusted": False}
SECRET_AND_UNTRUSTED = {**SECRET, "untrusted": True}


def store_with(tmp_path, max_class="private", review=False, clock=None) -> MemoryStore:
    store = MemoryStore(
        Home(tmp_path / "home"),
        soul_starter=SOUL_STARTER,
        review=review,
        now=clock or Clock(),
        max_class=max_class,
    )
    store.ensure()
    return store


def indexed(store: MemoryStore, max_class: str) -> Index:
    index = Index(store.home, max_class=max_class)
    index.open()
    index.catch_up_all()
    return index


@pytest.mark.parametrize("file", ["memory", "user"])
def test_a_secret_session_add_becomes_a_secret_note_the_index_leaves_out(tmp_path, file):
    store = store_with(tmp_path)
    name = f"{file}.md"
    before = memory_path(store, name).read_bytes()
    block_before = store.block()
    answer = store.call(
        *loose_call(args(action="add", file=file, text="launch code 1234"), **SECRET)
    )
    assert answer == (
        "saved as a note (secret): this session has read secret content, above what memory may "
        "hold (private). It is kept in notes.md; recall leaves it out and it never reaches the "
        "prompt."
    )
    assert memory_path(store, name).read_bytes() == before
    assert store.block() == block_before
    head = memory_path(store, "notes.md").read_text().splitlines()[0]
    assert head.endswith("in session mm-secret001 · secret")
    [line] = store.journal.records()
    assert (line.to, line.file, line.taint) == ("notes.md", name, "secret")
    index = indexed(store, "private")
    assert recall_on(index, "launch code", 5, session="mm-other").hits == []
    index.close()


@pytest.mark.parametrize(
    "call",
    [
        {"action": "replace", "file": "memory", "old": "kept entry", "text": "changed"},
        {"action": "remove", "file": "memory", "old": "kept entry"},
        {
            "action": "consolidate",
            "file": "memory",
            "entries": [{"old": "kept entry", "move": True}],
        },
    ],
)
def test_a_secret_session_cannot_change_identity(tmp_path, call):
    store = store_with(tmp_path)
    store.call(*loose_call(args(action="add", file="memory", text="kept entry"), **CLEAN))
    before = snapshot(store)
    with pytest.raises(UntrustedSession) as refused:
        store.call(*loose_call(json.dumps(call), **SECRET))
    assert str(refused.value) == (
        "this session has read secret content, above what memory may hold (private); "
        "it can take notes but not change memory.md."
    )
    assert snapshot(store) == before


def test_untrusted_and_secret_keeps_the_spec_refusal_and_the_honest_add(tmp_path):
    store = store_with(tmp_path)
    store.call(*loose_call(args(action="add", file="memory", text="kept entry"), **CLEAN))
    with pytest.raises(UntrustedSession) as refused:
        store.call(
            *loose_call(
                args(action="remove", file="memory", old="kept entry"), **SECRET_AND_UNTRUSTED
            )
        )
    assert str(refused.value) == untrusted_sentence("memory.md")
    answer = store.call(
        *loose_call(args(action="add", file="memory", text="x y"), **SECRET_AND_UNTRUSTED)
    )
    assert answer != UNTRUSTED_ADD and answer.startswith("saved as a note (secret)")
    assert "· secret · untrusted" in memory_path(store, "notes.md").read_text()


def test_at_or_below_max_class_nothing_changes(tmp_path):
    store = store_with(tmp_path, max_class="secret")
    answer = store.call(
        *loose_call(args(action="add", file="memory", text="allowed here"), **SECRET)
    )
    assert answer.startswith("memory.md updated")
    assert memory_path(store, "memory.md").read_text() == "allowed here\n"


def test_review_mode_is_no_way_around_the_class_rule(tmp_path):
    store = store_with(tmp_path, review=True)
    answer = store.call(
        *loose_call(args(action="add", file="memory", text="launch code"), **SECRET)
    )
    assert answer.startswith("saved as a note (secret)")
    assert not memory_path(store, "pending.jsonl").exists()
    with pytest.raises(UntrustedSession):
        store.call(*loose_call(args(action="remove", file="memory", old="launch code"), **SECRET))


def test_accept_refuses_an_edit_staged_above_max_class(tmp_path):
    # Staged while the owner allowed secret in identity, accepted after max_class went back down.
    staged = store_with(tmp_path, max_class="secret", review=True)
    answer = staged.call(
        *loose_call(args(action="add", file="memory", text="launch code"), **SECRET)
    )
    pending_id = answer.split("pending as ")[1].split(";")[0]
    store = store_with(tmp_path, max_class="private", review=True)
    before = snapshot(store)
    with pytest.raises(AdminRefused) as refused:
        store.accept(pending_id)
    assert str(refused.value) == (
        f"refused: {pending_id} was staged by a session that had read secret content, above what "
        "memory may hold (private); it cannot be accepted"
    )
    assert snapshot(store) == before


def test_accept_refuses_a_hand_written_untrusted_pending_line(tmp_path):
    store = store_with(tmp_path, review=True)
    line = {
        "id": "p-2026-09-24-0001",
        "time": "2026-09-24T21:02:11Z",
        "session": "mm-tainted01",
        "call": "c",
        "action": "add",
        "file": "memory.md",
        "taint": "private",
        "untrusted": True,
        "args": {"action": "add", "file": "memory", "text": "planted"},
    }
    memory_path(store, "pending.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(AdminRefused, match="had read untrusted content"):
        store.accept("p-2026-09-24-0001")
    assert memory_path(store, "memory.md").read_text() == ""


def _consolidate_away(store, text, **state):
    call = {"action": "consolidate", "file": "memory", "entries": [{"old": text, "move": True}]}
    store.call(*loose_call(json.dumps(call), **state))


def test_a_moved_entry_keeps_the_class_of_the_session_that_wrote_it_in(tmp_path):
    clock = Clock()
    store = store_with(tmp_path, max_class="secret", clock=clock)
    store.call(
        *loose_call(args(action="add", file="memory", text="the vault code is 4321"), **SECRET)
    )
    clock.advance(minutes=1)
    _consolidate_away(store, "the vault code is 4321", **CLEAN)
    notes_text = memory_path(store, "notes.md").read_text()
    assert notes_text.splitlines()[0].endswith("in session mm-clean0001 · secret")
    # An index that holds secret shows it as secret, never private.
    index = indexed(store, "secret")
    answer = recall_on(index, "vault", 5, session="mm-other")
    assert answer.text.splitlines()[0] == "[1] identity · moved 2026-09-24 from memory.md · secret"
    assert answer.label == Label(klass="secret", untrusted=False)
    index.close()
    # The default index leaves it out, as it leaves out every row above max_class.
    private_index = Index(store.home, max_class="private")
    private_index.open()
    private_index.reindex()
    assert recall_on(private_index, "vault", 5, session="mm-other").hits == []
    private_index.close()


def test_the_class_survives_an_undo_and_a_second_removal(tmp_path):
    clock = Clock()
    store = store_with(tmp_path, max_class="secret", clock=clock)
    store.call(*loose_call(args(action="add", file="memory", text="secret fact"), **SECRET))
    clock.advance(minutes=1)
    store.call(*loose_call(args(action="add", file="memory", text="plain fact"), **CLEAN))
    clock.advance(minutes=1)
    store.call(*loose_call(args(action="remove", file="memory", old="secret fact"), **CLEAN))
    removal = store.journal.records()[-1].id
    store.undo(removal)
    clock.advance(minutes=1)
    store.call(*loose_call(args(action="remove", file="memory", old="secret fact"), **CLEAN))
    store.call(*loose_call(args(action="remove", file="memory", old="plain fact"), **CLEAN))
    heads = [ln for ln in memory_path(store, "notes.md").read_text().splitlines() if ln[:2] == "§ "]
    assert heads[0].endswith(" · secret") and heads[1].endswith(" · secret")
    assert heads[2].endswith("in session mm-clean0001")  # private: the spec's header, unchanged


def test_an_entry_the_owner_wrote_by_hand_leaves_as_private(tmp_path):
    store = store_with(tmp_path)
    memory_path(store, "memory.md").write_text("hand written\n")
    store.call(*loose_call(args(action="remove", file="memory", old="hand written"), **CLEAN))
    head = memory_path(store, "notes.md").read_text().splitlines()[0]
    assert head.startswith("§ dropped ") and head.endswith("in session mm-clean0001")


def test_a_clean_session_writes_exactly_as_before(tmp_path):
    store = store_with(tmp_path)
    assert store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN)).startswith(
        "memory.md updated"
    )
    public = {**CLEAN, "taint": "public"}
    store.call(*loose_call(args(action="add", file="memory", text="b"), **public))
    store.call(*loose_call(args(action="remove", file="memory", old="b"), **CLEAN))
    head = memory_path(store, "notes.md").read_text().splitlines()[0]
    assert head == "§ dropped 2026-09-24T21:02Z from memory.md in session mm-clean0001"


def test_over_the_socket_a_secret_session_cannot_write_identity(memoryd):  # noqa: F811
    """memoryd as served: brokerd says the session is secret (a grant with result_class secret)."""
    memory_md = memoryd.home / "memory" / "memory.md"
    add = {"action": "add", "file": "memory", "text": "the vault code is 4321"}
    reply = memoryd.call("memory", add, session="mm-secret001", taint="secret")
    assert reply.ok and reply.output.startswith("saved as a note (secret)")
    assert memory_md.read_bytes() == b""
    block = memoryd.call("recall", {"query": "vault code"}, session="mm-other01")
    assert block.output == '(no matches for "vault code")'
    removed = memoryd.call(
        "memory",
        {"action": "remove", "file": "user", "old": "x"},
        session="mm-secret001",
        taint="secret",
    )
    assert removed.ok is False and removed.output.startswith("this session has read secret")


# --- a note's class goes with it into identity and out again ---------------------------------
@pytest.mark.parametrize("ref", ["note:1", "launch code 1234"])
def test_promote_of_a_note_above_max_class_is_refused_naming_its_class(tmp_path, ref):
    store = store_with(tmp_path)
    store.call(*loose_call(args(action="note", text="an ordinary note"), **CLEAN))
    store.call(*loose_call(args(action="add", file="memory", text="launch code 1234"), **SECRET))
    before = snapshot(store)
    with pytest.raises(AdminRefused) as refused:
        owner(store, "promote", {"ref": ref, "file": "memory"})
    assert str(refused.value) == (
        "refused: note:1 is a secret note, above what memory may hold (private); it stays in "
        "notes.md and cannot be promoted"
    )
    assert snapshot(store) == before
    # A note at or below max_class is promoted as before, its line as the owner's.
    owner(store, "promote", {"ref": "note:0", "file": "user"})
    assert last_line(store).note == {"ref": "note:0", "session": "mm-clean0001", "untrusted": False}


def _heads(store) -> list[str]:
    return [ln for ln in memory_path(store, "notes.md").read_text().splitlines() if ln[:2] == "§ "]


def test_a_promoted_note_leaves_identity_again_with_its_class(tmp_path):
    clock = Clock()
    store = store_with(tmp_path, max_class="secret", clock=clock)
    store.call(*loose_call(args(action="note", text="the vault code is 4321"), **SECRET))
    owner(store, "promote", {"ref": "note:0", "file": "memory"})
    promoted = last_line(store)
    assert promoted.taint is None and promoted.note == {
        "ref": "note:0",
        "session": "mm-secret001",
        "untrusted": False,
        "class": "secret",
    }
    clock.advance(minutes=1)
    _consolidate_away(store, "the vault code is 4321", **CLEAN)
    assert _heads(store)[-1].endswith("from memory.md in session mm-clean0001 · secret")
    index = indexed(store, "secret")
    answer = recall_on(index, "vault", 5, session="mm-other")
    assert all(line.endswith(" · secret") for line in answer.text.splitlines() if "moved" in line)
    index.close()
    # Undo brings it back; a later removal, by a store that rebuilt its index from the journal
    # alone, still knows its class.
    store.undo(last_line(store).id)
    store.journal_index.path.unlink(missing_ok=True)
    restarted = store_with(tmp_path, max_class="secret", clock=clock)
    restarted.call(
        *loose_call(args(action="remove", file="memory", old="the vault code is 4321"), **CLEAN)
    )
    assert _heads(restarted)[-1].startswith("§ dropped ") and _heads(restarted)[-1].endswith(
        " · secret"
    )


@pytest.mark.parametrize("way", ["owner's edit", "hand edit", "accept"])
def test_an_entry_kept_through_an_owners_change_keeps_its_class(tmp_path, way):
    clock = Clock()
    store = store_with(tmp_path, max_class="secret", clock=clock, review=way == "accept")
    add = args(action="add", file="memory", text="the vault code is 4321")
    store.call(*loose_call(add, **SECRET))
    if way == "accept":
        owner(store, "accept", "p-2026-09-24-0001")
    path = memory_path(store, "memory.md")
    text = "the vault code is 4321\n§\nthe owner's own line\n"
    if way == "owner's edit":
        base = json.loads(owner(store, "file", {"file": "memory"}))["base"]
        owner(store, "edit", {"file": "memory", "text": text, "base": base})
    else:
        path.write_text(text)
    clock.advance(minutes=1)
    later = store_with(tmp_path, max_class="secret", clock=clock)  # review off
    remove = args(action="remove", file="memory", old="the vault code is 4321")
    later.call(*loose_call(remove, **CLEAN))
    assert _heads(later)[-1].startswith("§ dropped ") and _heads(later)[-1].endswith(" · secret")
