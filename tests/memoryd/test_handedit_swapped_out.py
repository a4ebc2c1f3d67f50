"""memoryd killed after a write's journal line, before it removed the copy its exchange moved out
(the file's text before the write, under memoryd's temporary name): the next start removes that
copy as memoryd's own, with a line, never keeping it as FILE.hand-edit-<time> nor calling it the
owner's save. A leftover that holds text no place holds is still kept for the owner to merge."""

import logging

import pytest

from memoryd.journal import rollback
from memoryd.memory import entries, writeintent
from memoryd.server import remove_stale_temp_files
from tests.memoryd.store_helpers import (
    CLEAN,
    args,
    fill,
    journal_lines,
    loose_call,
    memory_path,
    new_store,
    owner,
)


def killed_after_the_journal_line(monkeypatch, write) -> list:
    """Run write as a kill after its journal line leaves it: the exchanged-out copy and the
    intent stay. The copies left."""
    left = []
    monkeypatch.setattr(rollback, "drop", left.append)
    monkeypatch.setattr(writeintent, "forget", lambda home: None)
    write()
    monkeypatch.undo()
    return [p for p in left if p is not None]


WRITES = {
    "replace": lambda store: store.call(
        *loose_call(args(action="replace", file="memory", old="first", text="second"), **CLEAN)
    ),
    "remove": lambda store: store.call(
        *loose_call(args(action="remove", file="memory", old="first"), **CLEAN)
    ),
    "undo": lambda store: owner(store, "undo", journal_lines(store)[-1]["id"]),
}


@pytest.mark.parametrize("write", WRITES)
def test_memoryds_own_swapped_out_copy_is_removed_not_kept(tmp_path, monkeypatch, caplog, write):
    store = new_store(tmp_path)
    fill(store, "memory", ["zero", "first"])
    before = memory_path(store, "memory.md").read_bytes()
    [left] = killed_after_the_journal_line(monkeypatch, lambda: WRITES[write](store))
    assert left.read_bytes() == before and left.name.startswith(".memory.md.")
    with caplog.at_level(logging.INFO):
        remove_stale_temp_files(store.home)
    assert not left.exists()
    assert not list(store.home.memory.glob("*.hand-edit-*"))
    assert f"{left}: removed a temporary file left by a crash" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_leftover_no_place_holds_is_still_kept(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["zero", "first"])
    path = memory_path(store, "memory.md").with_name(".memory.md.0123456789ab.tmp")
    path.write_bytes(entries.file_bytes(["zero", "first", "the owner's own line"]))
    remove_stale_temp_files(store.home)
    [kept] = store.home.memory.glob("memory.md.hand-edit-*")
    assert b"the owner's own line" in kept.read_bytes()
