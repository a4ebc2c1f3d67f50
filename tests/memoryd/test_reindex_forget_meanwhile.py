"""A forget or a restore that runs while `bxctl reindex` builds its new file: the new file read the
forgotten record or note before, its catch-up deletes the rows, and a delete leaves the words in
FTS5's term lists; the reindex merges them out once the file is in use, before it answers
(index/forgetsmeanwhile.py). Whatever the order of the forget and the reindex, after both have
answered no index file holds a word of what was forgotten and recall finds none. A reindex during
which nothing was forgotten merges nothing. memoryd as it runs: the build in its child process,
the owner's commands on the threads service.py runs them on."""

import asyncio
import json
import logging
import shutil
import sqlite3
from pathlib import Path

import pytest

from memoryd.config import load
from memoryd.data import ftsmerge
from memoryd.server import prepare
from memoryd.service import MemoryService
from memoryd.writer import WRITE
from proto.messages import Reindex
from tests.memoryd.owner_data_harness import owner_searched
from tests.memoryd.test_scheduling import _call, _config, _log

SECRET = "xanthic7731plover"
NOTED = "quenched4417marmot"  # a note's, said in no session log
FILLER = " ".join(f"w{i}" for i in range(200))


def _owner(service: MemoryService, command: str, **arg) -> dict:
    """An owner command, on the thread memoryd runs it on (a read here, the writer for a write)."""
    from memoryd.owner import dispatch

    kind, run = dispatch.lookup(command, json.dumps(arg))
    if kind == "read":
        return json.loads(run(service))
    future = service._writer.submit(WRITE, service._admin_write, run, service)
    return json.loads(future.result())


def _held(home: Path, word: str) -> list[str]:
    """The index's files holding word's bytes, after a checkpoint."""
    conn = sqlite3.connect(home / "index" / "memory.sqlite3")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sorted(
        p.name
        for p in (home / "index").iterdir()
        if p.name.startswith("memory.sqlite3") and p.is_file() and word.encode() in p.read_bytes()
    )


def _home(root: Path, mode: str = "spec") -> tuple[Path, MemoryService]:
    root.mkdir()
    home = root / "home"
    for n in range(6):
        _log(home, f"s-fill{n}", [f"filler {n} about the garden {FILLER}"])
    _log(home, "s-secret", ["the weather is mild", f"my locker code is {SECRET}"])
    _log(home, "s-keep", ["the zoo has a new exhibit"])
    service = prepare(load(_config(root, f'[recall]\nmode = "{mode}"\n')))
    return home, service


def _during_build(service: MemoryService, monkeypatch, then) -> None:
    """then() runs once the reindex's child has built its file (which read every log and
    notes.md), before the catch-up and swap on the writer."""
    real = service._rebuild.build

    def build(index):
        built = real(index)
        then()
        return built

    monkeypatch.setattr(service._rebuild, "build", build)


@pytest.mark.parametrize(
    "when, mode",
    [
        ("before the build", "spec"),
        ("during the build", "spec"),
        ("during the build", "context"),  # its context_hits too
        ("after the reindex", "spec"),
    ],
)
def test_a_forgotten_record_leaves_no_word_whatever_the_order_of_forget_and_reindex(
    tmp_path, monkeypatch, when, mode
):
    home, service = _home(tmp_path / "a", mode)
    said: list[str] = []

    def forget() -> None:
        said.append(_owner(service, "forget", id="session:s-secret:1")["message"])

    async def scenario():
        await service.catch_up()
        if when == "before the build":
            forget()
        if when == "during the build":
            _during_build(service, monkeypatch, forget)
        reply = await service.on_admin(Reindex())
        if when == "after the reindex":
            forget()
        found = await service.on_broker(_call("recall", {"query": SECRET}))
        kept = await service.on_broker(_call("recall", {"query": "zoo exhibit"}, "c2"))
        return reply, found, kept

    try:
        reply, found, kept = asyncio.run(scenario())
    finally:
        service.close()
    assert "and the index" in said[0]
    assert reply.records == (9 if when == "after the reindex" else 8)  # counted once kept out
    assert found.output.startswith("(no matches"), found.output
    assert "the zoo has a new exhibit" in kept.output
    assert _held(home, SECRET) == []
    assert not (home / "index" / ftsmerge.OWED_NAME).exists()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_note_forgotten_during_the_build_leaves_no_word(tmp_path, monkeypatch):
    home, service = _home(tmp_path / "a")
    said: list[str] = []

    def forget() -> None:
        owner_searched(service.index)
        said.append(_owner(service, "forget", id="note:0")["message"])

    async def scenario():
        await service.catch_up()
        note = _call("memory", {"action": "note", "text": f"the safe code is {NOTED}"})
        assert (await service.on_broker(note)).ok
        other = _call("memory", {"action": "note", "text": "the garden gate sticks"}, "c2")
        assert (await service.on_broker(other)).ok
        await service.catch_up()
        _during_build(service, monkeypatch, forget)
        reply = await service.on_admin(Reindex())
        found = await service.on_broker(_call("recall", {"query": NOTED}, "c3"))
        kept = await service.on_broker(_call("recall", {"query": "garden gate"}, "c4"))
        return reply, found, kept

    try:
        reply, found, kept = asyncio.run(scenario())
    finally:
        service.close()
    assert "and the index" in said[0], said
    assert found.output.startswith("(no matches"), found.output
    assert "the garden gate sticks" in kept.output
    assert _held(home, NOTED) == []
    assert not (home / "index" / ftsmerge.OWED_NAME).exists()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_restore_during_the_build_keeps_its_forgotten_words_out_of_the_new_file(
    tmp_path, monkeypatch
):
    """The archive's forgotten.jsonl lists a record this home's log holds (forgotten on the
    machine the backup was made on); the restore runs while this home's reindex builds."""
    other, there = _home(tmp_path / "b")
    try:
        _owner(there, "forget", id="session:s-secret:1")
        archive = Path(_owner(there, "backup")["path"])
    finally:
        there.close()
    home, service = _home(tmp_path / "a")
    (home / "backups").mkdir(mode=0o700, exist_ok=True)
    shutil.copy(archive, home / "backups" / archive.name)
    said: list[dict] = []

    def restore() -> None:
        said.append(_owner(service, "restore", name=archive.name, replace=True))

    async def scenario():
        await service.catch_up()
        _during_build(service, monkeypatch, restore)
        await service.on_admin(Reindex())
        return await service.on_broker(_call("recall", {"query": SECRET}))

    try:
        found = asyncio.run(scenario())
    finally:
        service.close()
    assert said, "the restore ran"
    assert found.output.startswith("(no matches"), found.output
    assert _held(home, SECRET) == []
    assert not (home / "index" / ftsmerge.OWED_NAME).exists()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_reindex_during_which_nothing_was_forgotten_merges_nothing(tmp_path, monkeypatch, caplog):
    """Rows the catch-up deletes for another reason (a note removed during the build) hold no
    forgotten text: no merge is owed, none is made."""
    home, service = _home(tmp_path / "a")

    def remove() -> None:
        call = _call("memory", {"action": "remove", "ref": "note:0"}, "c9")
        asyncio.run(service.on_broker(call))

    async def scenario():
        await service.catch_up()
        note = _call("memory", {"action": "note", "text": "the garden gate sticks"})
        assert (await service.on_broker(note)).ok
        await service.catch_up()
        _during_build(service, monkeypatch, remove)
        return await service.on_admin(Reindex())

    caplog.set_level(logging.INFO)
    try:
        asyncio.run(scenario())
    finally:
        service.close()
    assert not any("merged in" in r.getMessage() for r in caplog.records)
    assert not any("forgotten during the build" in r.getMessage() for r in caplog.records)
    assert not (home / "index" / ftsmerge.OWED_NAME).exists()
    shutil.rmtree(tmp_path, ignore_errors=True)
