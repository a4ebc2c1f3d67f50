"""The caller is one frozen value; journal, pending and recall-log lines are models.

The lines under tests/data/records were written by the code before the models existed: each reads
as its model and dumps back to the same bytes. A line that is not of its model's shape is skipped
and named (file and line), where before it was taken as a dict and failed further on.
"""

import dataclasses
import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from memoryd.journal.journal import Edit, EditLine, Journal
from memoryd.journal.linefile import read_lines
from memoryd.journal.recallline import RecallLine
from memoryd.memory import edits
from memoryd.memory.pendingline import PendingLine
from memoryd.owner import recallcounts
from memoryd.trust.caller import OWNER, Caller
from proto.messages import MemoryCall, ToolRequest
from tests.callargs import loose_call

from .store_helpers import (
    CLEAN,
    TAINTED,
    args,
    last_line,
    memory_path,
    new_store,
    owner,
    snapshot,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "records"


def raw_lines(name: str) -> list[bytes]:
    return [line for line in (DATA / name).read_bytes().split(b"\n") if line]


def journal_bytes(line: EditLine) -> bytes:
    return json.dumps(line.dump(), ensure_ascii=False).encode()


@pytest.mark.parametrize("raw", raw_lines("edits-2026-09.jsonl"))
def test_every_journal_line_on_disk_reads_and_dumps_to_the_same_bytes(raw):
    line = EditLine.model_validate_json(raw)
    assert journal_bytes(line) == raw


def test_the_journal_lines_extra_keys_are_attributes():
    lines = read_lines(DATA / "edits-2026-09.jsonl", EditLine)
    by_action = {line.action: line for line in lines}
    assert by_action["undo"].undoes == "2026-09-24-0008" and by_action["undo"].session is None
    assert (by_action["accept"].pending, by_action["accept"].requested) == (
        "p-2026-09-24-0001",
        "add",
    )
    assert "taint" not in by_action["reject"].dump()  # a reject never had one
    assert by_action["promote"].note == {
        "ref": "note:0",
        "session": "mm-clean0001",
        "untrusted": False,
    }
    assert [line.recovered for line in lines if line.recovered] == [True]
    assert lines[-1].model_extra == {"written_by": "a later memoryd"}
    assert [n.kind for n in by_action["consolidate"].notes] == ["moved", "dropped"]


def test_pending_and_recall_lines_on_disk_read_and_dump_to_the_same_bytes():
    for raw in raw_lines("pending.jsonl"):
        item = PendingLine.model_validate_json(raw)
        assert json.dumps(item.dump(), ensure_ascii=False).encode() == raw
    for raw in raw_lines("recalls-2026-09.jsonl"):
        assert RecallLine.model_validate_json(raw).dump_line().encode() == raw


def test_a_journal_with_lines_on_disk_reads_through_the_owners_commands(tmp_path):
    store = new_store(tmp_path)
    shutil.copy(DATA / "edits-2026-09.jsonl", store.home.edits / "2026-09.jsonl")
    log = owner(store, "log", "20")
    assert (
        "2026-09-24-0009  2026-09-24T21:03:14Z  owner  undo  memory.md (undoes 2026-09-24-0008)"
        in log
    )
    assert "user.md unchanged (pending p-2026-09-24-0002, add)" in log
    assert store.journal.next_id(dt.datetime(2026, 9, 24, 22, tzinfo=dt.UTC)) == "2026-09-24-0016"


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ({"after": "not a list"}, "after"),
        ({"untrusted": "maybe"}, "untrusted"),
        ({"notes": [{"kind": "moved"}]}, "notes.0.text"),
        ({"id": 7}, "id"),
    ],
)
def test_a_journal_line_of_the_wrong_shape_is_skipped_and_named(tmp_path, caplog, damage, why):
    store = new_store(tmp_path)
    path = store.home.edits / "2026-09.jsonl"
    good = raw_lines("edits-2026-09.jsonl")[:2]
    bad = json.dumps({**json.loads(good[0]), "id": "2026-09-24-0003", **damage}).encode()
    path.write_bytes(b"\n".join([good[0], bad, good[1]]) + b"\n")
    records = Journal(store.home).records()
    assert [r.id for r in records] == ["2026-09-24-0001", "2026-09-24-0002"]
    assert f"{path}: line 2 is not a EditLine ({why}:" in caplog.text


def test_a_pending_line_of_the_wrong_shape_is_not_listed_and_is_named(tmp_path, caplog):
    store = new_store(tmp_path, review=True)
    path = store.home.memory_file("pending.jsonl")
    good = raw_lines("pending.jsonl")[0]
    bad = json.dumps({**json.loads(good), "id": "p-2026-09-24-0002", "untrusted": "no"})
    path.write_bytes(good + b"\n" + bad.encode() + b"\n")
    listed = owner(store, "pending").splitlines()
    assert listed[0].startswith("p-2026-09-24-0001")
    assert not any(line.startswith("p-2026-09-24-0002") for line in listed)
    assert listed[-1].startswith(f"(1 damaged line of {path} not listed (p-2026-09-24-0002)")
    assert f"{path}: line 2 is not a PendingLine (untrusted:" in caplog.text


def test_a_damaged_recall_line_is_named_and_not_counted(tmp_path, caplog):
    lines = raw_lines("recalls-2026-09.jsonl")
    damaged = b' {"time":"2026-09-24T21:09:00Z","session":"s","query":"q","k":"five","hits":[]}'
    path = tmp_path / "2026-09.jsonl"
    counts, recalls = recallcounts.count_month(
        b"\n".join([lines[0], damaged, b" " + lines[2]]) + b"\n", b"2026-09-01T00:00:00", path
    )
    assert recalls == 2 and counts == {3: 1, 0: 1}
    assert f"{path}: line 2 is not a RecallLine (k:" in caplog.text


def test_the_caller_is_taken_from_the_message_whole_and_cannot_change():
    message = MemoryCall(
        request=ToolRequest(session="mm-clean0001", call_id="c-9", tool="memory", arguments="{}"),
        taint="secret",
        untrusted=True,
    )
    caller = Caller.of(message)
    assert caller == Caller("mm-clean0001", "c-9", "secret", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        caller.taint = "public"  # type: ignore[misc]
    assert Caller.checked(**CLEAN).head() == {
        "session": "mm-clean0001",
        "call": "call-1",
        "taint": "private",
        "untrusted": False,
    }


def test_the_id_of_a_damaged_line_is_never_used_again(tmp_path):
    store = new_store(tmp_path, review=True)
    edits = store.home.edits / "2026-09.jsonl"
    good = json.loads(raw_lines("edits-2026-09.jsonl")[0])
    edits.write_text(json.dumps({**good, "id": "2026-09-24-0007", "after": 5}) + "\n")
    pending = store.home.memory_file("pending.jsonl")
    item = json.loads(raw_lines("pending.jsonl")[0])
    pending.write_text(json.dumps({**item, "id": "p-2026-09-24-0004", "untrusted": "no"}) + "\n")
    when = dt.datetime(2026, 9, 24, 22, tzinfo=dt.UTC)
    assert store.journal.records() == [] and store.review.items() == []
    assert store.journal.next_id(when) == "2026-09-24-0008"
    assert store.review.next_id(when) == "p-2026-09-24-0005"


def _keys(line: dict) -> list[str]:
    return list(line)


def _data_keys() -> dict[str, list[str]]:
    lines = [json.loads(raw) for raw in raw_lines("edits-2026-09.jsonl")]
    by_id = {line["id"][-4:]: line for line in lines}
    kinds = {
        "add": "0001",
        "note": "0004",
        "untrusted add": "0005",
        "secret add": "0006",
        "replace": "0007",
        "consolidate": "0008",
        "undo": "0009",
        "promote": "0010",
        "hand-edit": "0011",
        "accept": "0012",
        "reject": "0013",
        "recovered": "0014",
    }
    return {kind: _keys(by_id[number]) for kind, number in kinds.items()}


def test_every_kind_of_line_is_written_with_the_keys_in_the_order_written_before(
    tmp_path, monkeypatch
):
    secret = {**CLEAN, "session": "mm-secret001", "taint": "secret"}
    store = new_store(tmp_path / "one")
    written: dict[str, list[str]] = {}

    def call(kind: str, caller: dict, **fields) -> None:
        store.call(*loose_call(args(**fields), **caller))
        written[kind] = _keys(last_line(store).dump())

    call("add", CLEAN, action="add", file="memory", text="a")
    call("note", CLEAN, action="note", text="n")
    call("untrusted add", TAINTED, action="add", file="user", text="t")
    call("secret add", secret, action="add", file="user", text="s")
    call("replace", CLEAN, action="replace", file="memory", old="a", text="b")
    moved = [{"old": "b", "move": True}]
    consolidate = {"action": "consolidate", "file": "memory", "entries": moved}
    store.call(*loose_call(json.dumps(consolidate), **CLEAN))
    written["consolidate"] = _keys(last_line(store).dump())
    owner(store, "undo", last_line(store).id)
    written["undo"] = _keys(last_line(store).dump())
    owner(store, "promote", {"ref": "note:0", "file": "user"})
    written["promote"] = _keys(last_line(store).dump())
    memory_path(store, "memory.md").write_text("by hand\n")
    store.detect_hand_edits()
    written["hand-edit"] = _keys(last_line(store).dump())

    review = new_store(tmp_path / "two", review=True)
    for text in ("x", "y"):
        review.call(*loose_call(args(action="add", file="user", text=text), **CLEAN))
    owner(review, "accept", "p-2026-09-24-0001")
    written["accept"] = _keys(last_line(review).dump())
    owner(review, "reject", "p-2026-09-24-0002")
    written["reject"] = _keys(last_line(review).dump())

    crashed = new_store(tmp_path / "three")

    def killed(*_args, **_kwargs):
        raise SystemExit("killed after the rename")

    monkeypatch.setattr(crashed.journal, "append", killed)
    with pytest.raises(SystemExit):
        crashed.call(*loose_call(args(action="add", file="memory", text="r"), **CLEAN))
    restarted = new_store(tmp_path / "three")
    written["recovered"] = _keys(last_line(restarted).dump())

    assert written == _data_keys()


@pytest.mark.parametrize("key", ["sesion", "undoe", "Note", "written_by"])
def test_an_edit_with_a_key_the_journal_does_not_know_is_refused_and_writes_nothing(tmp_path, key):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    before = snapshot(store)

    def decide(current):
        return edits.Plan("promote", "memory.md", tuple(current), (*current, "b"))

    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        store.owner_edit("memory.md", decide, OWNER, "promote", {key: "x"})
    assert snapshot(store) == before
    with pytest.raises(ValidationError, match=key):
        Edit(**{key: "x"})
