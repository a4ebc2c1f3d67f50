"""Review on: a staged write lives only in memory/pending.jsonl until the owner accepts or rejects
it. That file removed (or replaced by an older copy) takes the writes with it; pending, accept and
reject say they are gone and how to read them back, and memoryd's start says it once, rather than
"no edits are waiting" as for an id that was never handed out."""

import logging

import pytest

from memoryd.errors import AdminRefused
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, args, memory_path, new_store, owner

DAY = "2026-09-24"


def _stage(store, text: str) -> None:
    store.call(*loose_call(args(action="add", file="memory", text=text), **CLEAN))


def test_staged_writes_gone_with_pending_jsonl_are_said(tmp_path, caplog):
    store = new_store(tmp_path, review=True)
    _stage(store, "Owner likes tea.")
    _stage(store, "Owner likes rain.")
    path = memory_path(store, "pending.jsonl")
    path.unlink()
    _stage(store, "Owner likes hills.")  # a write after the loss is listed as waiting
    listed = owner(store, "pending").splitlines()
    assert listed[0].startswith(f"p-{DAY}-0003  ")
    assert listed[-1] == (
        f"(2 staged writes (p-{DAY}-0001 to p-{DAY}-0002) memoryd answered as pending are gone: "
        f"neither {path} holds them nor the journal an accept or reject: their lines left the "
        "file (deleted, replaced by an older copy, or removed by hand). A backup made while they "
        "waited holds their lines: tar -xzOf ARCHIVE memory/pending.jsonl prints the lines and "
        "changes nothing (runbook: journal-lost))"
    )
    for command in ("accept", "reject"):
        with pytest.raises(AdminRefused) as refused:
            owner(store, command, f"p-{DAY}-0001")
        assert str(refused.value).startswith(
            f"refused: p-{DAY}-0001 was staged, but its line has left {path} since (deleted, "
            "replaced by an older copy, or removed by hand) and the journal holds no accept or "
            "reject of it"
        )
    # An id never handed out, or one accepted, is still "not waiting".
    with pytest.raises(AdminRefused, match=f"no edit p-{DAY}-0009 is waiting"):
        owner(store, "accept", f"p-{DAY}-0009")
    owner(store, "accept", f"p-{DAY}-0003")
    with pytest.raises(AdminRefused, match=f"no edit p-{DAY}-0003 is waiting"):
        owner(store, "accept", f"p-{DAY}-0003")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        new_store(tmp_path, review=True)  # a restart says it once
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [f"{path}: {listed[-1].strip('()')}"]


def test_nothing_is_said_when_every_staged_write_was_resolved(tmp_path, caplog):
    store = new_store(tmp_path, review=True)
    _stage(store, "Owner likes tea.")
    _stage(store, "Owner likes rain.")
    owner(store, "accept", f"p-{DAY}-0001")
    owner(store, "reject", f"p-{DAY}-0002")
    memory_path(store, "pending.jsonl").unlink()  # nothing waited in it
    assert owner(store, "pending") == "no edits are waiting for review"
    caplog.clear()
    with caplog.at_level(logging.INFO):
        new_store(tmp_path, review=True)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
