"""The block leaves out an entry whose class is above [index] max_class as it is now: the owner may
lower max_class after the entry came in, and identity never holds more than recall may show."""

import json
import logging
import shutil

import pytest

from memoryd.errors import BlockRefused
from memoryd.home import Home
from memoryd.memory.store import MemoryStore
from memoryd.public import memory_block
from memoryd.trust import classrule
from tests.callargs import loose_call

from .owner_data_harness import Memoryd
from .store_helpers import CLEAN, SOUL_STARTER, Clock, args, memory_path, owner

SECRET = {"session": "mm-secret001", "call_id": "call-9", "taint": "secret", "untrusted": False}
PUBLIC = {"session": "mm-public001", "call_id": "call-8", "taint": "public", "untrusted": False}
PIN = "Bank PIN is 4242."
REASON = "it came in as secret, above what memory may hold (private)"


def store_on(home: Home, max_class: str, clock: Clock | None = None) -> MemoryStore:
    store = MemoryStore(home, soul_starter=SOUL_STARTER, now=clock or Clock(), max_class=max_class)
    store.ensure()
    return store


def lowered(tmp_path, file: str = "memory") -> MemoryStore:
    """A secret entry written while max_class was secret, then max_class lowered to private."""
    home = Home(tmp_path / "home")
    before = store_on(home, "secret")
    before.call(*loose_call(args(action="add", file="memory", text="Owner prefers UTC."), **CLEAN))
    before.call(*loose_call(args(action="add", file=file, text=PIN), **SECRET))
    assert PIN in before.block()
    return store_on(home, "private")


@pytest.mark.parametrize("file", ["memory", "user"])
def test_an_entry_above_a_lowered_max_class_is_left_out_and_logged(tmp_path, caplog, file):
    store = lowered(tmp_path, file)
    with caplog.at_level(logging.WARNING, logger="memoryd.memory.block"):
        text = store.block()
    assert PIN not in text and "Owner prefers UTC." in text
    number = 2 if file == "memory" else 1
    said = [r.getMessage() for r in caplog.records]
    assert said == [f"{file}.md: entry {number} left out of the memory block: {REASON}"]


def test_bxctl_memory_block_lists_it_as_left_out(tmp_path):
    store = lowered(tmp_path)
    view = json.loads(owner(store, "block", {"json": True}))
    assert PIN not in view["block"]
    assert view["left_out"] == [
        {"file": "memory.md", "number": 2, "ref": "memory.md:2", "entry": PIN, "reason": REASON}
    ]
    shown = owner(store, "block", {})
    assert f"-- left out of the block --\nmemory.md:2: {REASON}\n    {PIN}\n" in shown


@pytest.mark.parametrize(
    ("max_class", "shown"),
    [("secret", True), ("private", False), ("public", False)],
)
def test_memory_mcp_renders_with_the_max_class_it_is_given(tmp_path, max_class, shown):
    store = lowered(tmp_path)
    assert (PIN in memory_block(store.home.root, max_class)) is shown
    assert PIN not in memory_block(store.home.root)  # the default is memoryd's: private


def test_an_undo_does_not_bring_it_back_into_the_block(tmp_path):
    store = lowered(tmp_path)
    # Removed while max_class is secret again: a session under private is not shown it to name.
    shown = store_on(store.home, "secret")
    shown.call(*loose_call(args(action="remove", file="memory", old=PIN), **CLEAN))
    shown.undo(shown.journal.records()[-1].id)
    assert PIN in memory_path(store, "memory.md").read_text()
    assert PIN not in store.block()


def test_a_restore_does_not_bring_it_back_into_the_block(tmp_path):
    a = Memoryd(tmp_path / "a", max_class="secret")
    try:
        a.store.call(*loose_call(args(action="add", file="user", text=PIN), **SECRET))
        made = a.data("backup")
    finally:
        a.close()
    b = Memoryd(tmp_path / "b")
    try:
        shutil.copy(made["path"], b.home.root / "backups" / "a.tar.gz")
        b.data("restore", name="a.tar.gz")
        assert PIN in b.home.memory_file("user.md").read_text()
        view = json.loads(b.admin("block", {"json": True}))
        assert PIN not in view["block"]
        assert [item["ref"] for item in view["left_out"]] == ["user.md:1"]
    finally:
        b.close()


def test_an_imported_entry_keeps_the_class_it_was_exported_with(tmp_path):
    """An import is the owner's act, but the entry it brings holds what the exporting home's
    secret session wrote: lowering max_class leaves it out as it does one written here."""
    a = Memoryd(tmp_path / "a", max_class="secret")
    try:
        a.store.call(*loose_call(args(action="add", file="user", text=PIN), **SECRET))
        export = a.data("export")["path"]
    finally:
        a.close()
    b = Memoryd(tmp_path / "b", max_class="secret")
    try:
        shutil.copy(export, b.home.root / "backups" / "e.jsonl")
        b.data("import", name="e.jsonl")
        assert PIN in json.loads(b.admin("block", {"json": True}))["block"]
    finally:
        b.close()
    b = Memoryd(tmp_path / "b", max_class="private")
    try:
        view = json.loads(b.admin("block", {"json": True}))
        assert PIN not in view["block"]
        assert [(item["ref"], item["reason"]) for item in view["left_out"]] == [
            ("user.md:1", REASON)
        ]
    finally:
        b.close()


def test_under_public_only_public_entries_are_shown(tmp_path):
    """Export's class: a public session's entry is public, the owner's own private."""
    home = Home(tmp_path / "home")
    store = store_on(home, "public")
    store.call(*loose_call(args(action="add", file="memory", text="Public fact."), **PUBLIC))
    memory_path(store, "user.md").write_text("Written by hand.\n")
    text = store.block()
    assert "Public fact." in text and "Written by hand." not in text


def test_a_journal_that_cannot_be_read_refuses_the_block(tmp_path):
    store = lowered(tmp_path)
    month = store.journal.month_files()[0]
    held = tmp_path / "held.jsonl"
    month.rename(held)
    month.symlink_to(held)
    with pytest.raises(BlockRefused, match=r"^the edit journal cannot be read \("):
        memory_block(store.home.root)


@pytest.mark.parametrize(
    ("sources", "max_class", "above"),
    [
        ({"a": None, "b": "private", "c": "secret"}, "private", {"c": "secret"}),
        ({"a": None, "b": "public"}, "public", {"a": "private"}),
        ({"a": "secret", "b": "no class"}, "secret", {}),
        ({"a": "no class"}, "private", {"a": "secret"}),
    ],
)
def test_an_entry_class_is_the_one_it_came_in_with(sources, max_class, above):
    assert classrule.above_max(sources, max_class) == above
