"""memory/.writing.json, the intent of the write in progress (memory/handedit.py): kept like every
file memoryd keeps (never a FIFO waited on, a folder or link named), and a damaged one ignored."""

import contextlib
import json
import os
import signal
import time

import pytest

from memoryd.errors import WriteFailed
from memoryd.home import Home, NotRegular, unsafe_entry
from memoryd.memory import writeintent
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, args, fill, last_line, memory_path, new_store
from tests.memoryd.test_hostile_home import start_fails


class Hung(Exception):
    """Not an OSError, so that no handler of memoryd's takes it for a failed read or write."""


@contextlib.contextmanager
def within(seconds: float):
    """Fail the test instead of hanging it when the body blocks (on a FIFO) past seconds."""

    def stop(*_):
        raise Hung(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def plant(path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(path.with_name("notes.md"))


@pytest.mark.parametrize(
    "name", [".writing.json", "forgotten.jsonl", ".forgetting.json", ".ids.json"]
)
@pytest.mark.parametrize(
    ("kind", "what"),
    [("fifo", "a FIFO"), ("folder", "not a file"), ("link", "a symbolic link")],
)
def test_the_start_check_names_a_non_file_at_the_intent_or_forgotten(tmp_path, name, kind, what):
    home = new_store(tmp_path).home
    plant(home.memory_file(name), kind)
    refused = unsafe_entry(home)
    assert isinstance(refused, NotRegular)
    assert str(refused).startswith(f"{home.memory_file(name)} is {what}")


def test_a_fifo_at_the_intent_refuses_the_start_without_hanging(tmp_path):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="first note"), **CLEAN))
    os.mkfifo(writeintent.intent_path(store.home))
    began = time.monotonic()
    line = start_fails(tmp_path)
    assert time.monotonic() - began < 20
    assert "memory/.writing.json is a FIFO" in line


@pytest.mark.parametrize(("kind", "what"), [("fifo", "a FIFO"), ("folder", "not a file")])
@pytest.mark.parametrize("call", [{"action": "note"}, {"action": "add", "file": "memory"}])
def test_a_write_names_a_non_file_at_the_intent_and_leaves_it(tmp_path, kind, what, call):
    store = new_store(tmp_path)
    path = writeintent.intent_path(store.home)
    plant(path, kind)
    before = {n: memory_path(store, n).read_bytes() for n in ("notes.md", "memory.md")}
    with within(10), pytest.raises(WriteFailed) as refused:
        store.call(*loose_call(args(**call, text="a fact"), **CLEAN))
    assert str(refused.value).startswith("not applied: ")
    assert f"memory/.writing.json is {what}" in str(refused.value)
    assert {n: memory_path(store, n).read_bytes() for n in before} == before
    assert os.path.lexists(path) and not path.is_file()  # not memoryd's to remove


def test_a_fifo_at_the_intent_is_not_read(tmp_path, caplog):
    store = new_store(tmp_path)
    os.mkfifo(writeintent.intent_path(store.home))
    with within(10):
        assert writeintent.read_intent(store.home) is None
        store.detect_hand_edits()
    assert "memory/.writing.json is a FIFO" in caplog.text


def note_intent(store, **fields) -> dict:
    """An intent for a note appended at the end of notes.md, with fields changed."""
    edit = {"session": CLEAN["session"], "action": "note", "to": "notes.md", "after": ["x"]}
    size = os.path.getsize(memory_path(store, "notes.md"))
    return {"fields": edit, "notes_at": size, "block": "\n- x\n", **fields}


@pytest.mark.parametrize(
    "damage",
    [
        {"notes_at": 2**63},
        {"notes_at": 2**64 + 1},
        {"notes_at": 10**400},
        {"notes_at": -1},
        {"notes_at": -(2**63) - 1},
        {"notes_at": True},
        {"notes_at": False},
        {"notes_at": 1.5},
        {"notes_at": "0"},
        {"notes_at": None},
        {"block": 7},
        {"block": None},
        {"block": ["x"]},
        {"block": ""},
        {"block": "\ud800"},
        {"fields": {"to": "notes.md", "after": "x"}},
        {"fields": {"to": 5}},
        {"fields": {"to": "notes.md", "bogus": 1}},
        {"fields": []},
    ],
)
def test_a_damaged_note_intent_is_ignored_at_start(tmp_path, damage):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="first note"), **CLEAN))
    notes = memory_path(store, "notes.md").read_bytes()
    lines = len(store.journal.records())
    intent = note_intent(store, **damage)
    writeintent.intent_path(store.home).write_text(json.dumps(intent))
    restarted = new_store(tmp_path)
    assert memory_path(restarted, "notes.md").read_bytes() == notes
    assert len(restarted.journal.records()) == lines
    restarted.call(*loose_call(args(action="note", text="second note"), **CLEAN))
    assert last_line(restarted).after == ["second note"]


def test_an_intent_that_cannot_be_journalled_leaves_a_hand_edit(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    memory_path(store, "memory.md").write_text("a\n§\nb\n")
    edit = {"session": "\udc00", "action": "add", "to": "memory.md", "before": ["a"]}
    intent = {"fields": {**edit, "after": ["a", "b"]}}
    writeintent.intent_path(store.home).write_text(json.dumps(intent))
    restarted = new_store(tmp_path)
    last = last_line(restarted)
    assert last.action == "hand-edit" and last.after == ["a", "b"]


@pytest.mark.parametrize(
    "data",
    [b"[" * 200_000 + b"]" * 200_000, b'{"fields": {}, "x": "' + b"a" * 1_048_576 + b'"}', b"\xff"],
)
def test_a_damaged_intent_file_is_ignored(tmp_path, data):
    store = new_store(tmp_path)
    writeintent.intent_path(store.home).write_bytes(data)
    assert writeintent.read_intent(store.home) is None
    new_store(tmp_path).call(*loose_call(args(action="note", text="a note"), **CLEAN))


def test_a_note_appended_but_not_journalled_is_still_recovered(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="first note"), **CLEAN))

    def crash(*_args, **_kwargs):
        raise SystemExit("killed after the append")

    monkeypatch.setattr(store.journal, "append", crash)
    with pytest.raises(SystemExit):
        store.call(*loose_call(args(action="note", text="second note"), **CLEAN))
    monkeypatch.undo()
    restarted = new_store(tmp_path)
    last = last_line(restarted)
    assert last.recovered is True and last.after == ["second note"]
    assert not os.path.lexists(writeintent.intent_path(Home(tmp_path / "home")))
