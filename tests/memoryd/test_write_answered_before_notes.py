"""A memory write is answered once it is journalled; the catch-up of notes.md after it runs after
its answer, as a writer job of its own (notesafter.py), and still tells memoryd's own change of
notes.md from the owner's. In-process: prepare() and the handlers, on a real home.

Nothing here is timed: a slow catch-up of notes.md is injected (one that waits for an event, as
a notes.md of years edited by hand and read again from its start does) and the tests assert what
finished before what.
"""

import asyncio
import json
import logging
import threading
from pathlib import Path

import pytest

from memoryd.config import load
from memoryd.server import prepare
from memoryd.writer import WRITE
from proto.messages import MemoryCall, ToolRequest
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN

SOUL = "You are a careful personal agent.\n"
OLD = "§ noted 2026-11-01T10:00Z in session s-old · private\nan old note about the garden\n"
CHANGED = "notes memory/notes.md changed outside memoryd: indexing it again"


def _service(tmp_path: Path):
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{tmp_path / "home"}"\n')
    notes = tmp_path / "home" / "memory" / "notes.md"
    notes.parent.mkdir(parents=True, mode=0o700)
    notes.write_text(OLD)
    notes.chmod(0o600)
    service = prepare(load(config))
    service.index.catch_up_all()
    return service, notes


def _call(tool: str, args: dict, call_id: str) -> MemoryCall:
    req = ToolRequest(session="s-clean", call_id=call_id, tool=tool, arguments=json.dumps(args))
    return MemoryCall(request=req, taint="private", untrusted=False)


def _journal(home: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted((home / "memory/edits").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def test_a_write_is_answered_before_the_notes_catch_up_after_it(tmp_path, monkeypatch):
    """The owner fixed a typo in notes.md by hand: the catch-up after the next write reads
    notes.md again from its start, for as long as that takes; the write is answered before."""
    service, notes = _service(tmp_path)
    notes.write_text(OLD.replace("the garden", "the gardens"))  # the owner's fix, by hand
    release, running = threading.Event(), threading.Event()
    real = service.index.catch_up_notes

    def slow(*args):
        running.set()
        release.wait(10)
        return real(*args)

    monkeypatch.setattr(service.index, "catch_up_notes", slow)

    async def scenario():
        note = {"action": "note", "text": "The plumber comes on Tuesday."}
        answer = await asyncio.wait_for(service.on_broker(_call("memory", note, "c1")), 5)
        # Answered with the catch-up still to run (or running): the write is journalled.
        held = not release.is_set()
        journal = _journal(tmp_path / "home")
        release.set()
        found = await asyncio.wait_for(
            service.on_broker(_call("recall", {"query": "plumber"}, "c2")), 10
        )
        gardens = await service.on_broker(_call("recall", {"query": "gardens"}, "c3"))
        return answer, held, journal, found, gardens

    try:
        answer, held, journal, found, gardens = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert answer.ok and answer.output == "noted" and held
    assert [line["action"] for line in journal] == ["note"]
    assert "The plumber comes on Tuesday." in notes.read_text()
    assert running.is_set()  # the catch-up ran after the answer, on the writer
    assert "The plumber comes on Tuesday." in found.output  # and the recall waited for it
    assert "the gardens" in gardens.output


def _apply(service, text: str):
    parsed, caller = loose_call(json.dumps({"action": "note", "text": text}), **CLEAN)
    return service._writer.submit(WRITE, service._broker._apply, parsed, caller)


@pytest.mark.parametrize("edited", ["no", "between", "after"])
def test_writes_caught_up_after_their_answers_are_still_told_from_a_hand_edit(
    tmp_path, caplog, edited
):
    """Two writes run before their catch-up: notes.md changed only by them is read on from where
    the index stopped; a hand edit between them, or after them before the catch-up, has it read
    again from its start (the hand edit's text is what the index holds)."""
    service, notes = _service(tmp_path)
    gate = threading.Event()
    writer = service._writer
    writer.submit(WRITE, gate.wait, 10)  # the writer busy: what follows queues behind it

    def by_hand() -> None:
        notes.write_text(notes.read_text().replace("the garden", "the gardens"))

    futures = [_apply(service, "The heron came back.")]
    if edited == "between":
        writer.submit(WRITE, by_hand)
    futures.append(_apply(service, "The otter came too."))
    if edited == "after":
        writer.submit(WRITE, by_hand)
    renumbered = service.index.notes_seen.renumbered
    try:
        with caplog.at_level(logging.INFO, logger="memoryd"):
            gate.set()
            assert [f.result(10) for f in futures] == ["noted", "noted"]
            writer.submit(WRITE, lambda: None).result(10)  # the catch-ups queued after them
        read_again = service.index.notes_seen.renumbered != renumbered
        recalled = {
            query: service.recaller.recall(query, 10, session="s-test").text
            for query in ("heron", "otter", "gardens")
        }
    finally:
        gate.set()
        service.close()
    assert "The heron came back." in recalled["heron"]
    assert "The otter came too." in recalled["otter"]
    assert read_again is (edited != "no")
    assert (CHANGED in caplog.text.replace(str(tmp_path / "home") + "/", "")) is (edited != "no")
    assert ("an old note about the gardens" in recalled["gardens"]) is (edited != "no")
