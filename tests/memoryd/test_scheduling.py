"""memoryd serves before its catch-up, writes go before index work, and answers say what happened.
In-process: prepare() and the handlers, on a real home.

Nothing here is timed: a slow indexer is injected (a part that waits, or a build that waits for an
event) and the tests assert what finished before what.
"""

import asyncio
import json
import logging
import threading
import time
from pathlib import Path

import pytest

from memoryd.brokercalls import NOT_APPLIED
from memoryd.config import load
from memoryd.errors import MemorydError
from memoryd.index import indexer
from memoryd.index.index import Index
from memoryd.server import prepare
from memoryd.service import NOT_DONE, MemoryService
from memoryd.writer import WRITE
from proto.messages import (
    MemoryAdmin,
    MemoryBlock,
    MemoryCall,
    Reindex,
    SessionUpdated,
    ToolRequest,
)
from proto.records import UserRecord, append_session_record

SOUL = "You are a careful personal agent.\n"
T = "2026-09-20T14:02:11Z"


def _config(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{tmp_path / "home"}"\n{extra}')
    return config


def _log(home: Path, session: str, texts: list[str]) -> None:
    folder = home / "sessions" / session
    folder.mkdir(parents=True, exist_ok=True)
    for text in texts:
        append_session_record(folder / "0.jsonl", UserRecord(time=T, content=text))


def _call(tool: str, args: dict, call_id: str = "c1") -> MemoryCall:
    req = ToolRequest(session="s-clean", call_id=call_id, tool=tool, arguments=json.dumps(args))
    return MemoryCall(request=req, taint="private", untrusted=False)


def _recall_lines(home: Path) -> list[dict]:
    lines = []
    for path in sorted((home / "memory/recalls").glob("*.jsonl")):
        lines += [json.loads(raw) for raw in path.read_text().splitlines()]
    return lines


class SlowParts:
    """Wraps Index.catch_up_session_part: each part waits until let through, and is counted."""

    def __init__(self, monkeypatch, index: Index, *, wait: float = 0.0):
        self.real = index.catch_up_session_part
        self.gate = threading.Event()
        self.parts: list[str] = []
        self.wait = wait
        monkeypatch.setattr(index, "catch_up_session_part", self)

    def __call__(self, session: str):
        self.gate.wait(10)
        time.sleep(self.wait)
        self.parts.append(session)
        return self.real(session)


@pytest.fixture
def home_with_logs(tmp_path):
    home = tmp_path / "home"
    _log(home, "s-one", ["the alpha launch is on Thursday"])
    _log(home, "s-two", ["the beta launch is on Friday"])
    return tmp_path


def test_serves_the_block_and_recall_before_the_catch_up(home_with_logs, monkeypatch):
    service = prepare(load(_config(home_with_logs)))
    slow = SlowParts(monkeypatch, service.index)
    home = home_with_logs / "home"

    async def scenario():
        service.start_catch_up()
        block = await asyncio.wait_for(service.on_loop(MemoryBlock()), 10)
        found = await service.on_broker(_call("recall", {"query": "launch"}))
        assert slow.parts == []  # the catch-up has read no log yet
        slow.gate.set()
        await asyncio.wait_for(asyncio.to_thread(service.caught_up.wait, 10), 15)
        again = await service.on_broker(_call("recall", {"query": "launch"}))
        return block, found, again

    try:
        block, found, again = asyncio.run(scenario())
    finally:
        service.close()
    assert block.text.startswith("# soul.md")
    assert found.ok
    assert found.output == (
        '(no matches for "launch")\n(the index is catching up: 0 of 2 session logs read)'
    )
    assert "catching up" not in again.output and again.output.startswith("[1] ")
    first, second = _recall_lines(home)
    assert first["partial"] is True and "partial" not in second


def test_a_write_during_a_long_catch_up_answers_before_it_ends(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(home, "s-long", [f"record {n} about the harbour" for n in range(200)])
    monkeypatch.setattr(indexer, "PART_RECORDS", 10)  # 20 parts
    service = prepare(load(_config(tmp_path)))
    slow = SlowParts(monkeypatch, service.index, wait=0.02)
    slow.gate.set()

    async def scenario():
        service.start_catch_up()
        while not slow.parts:
            await asyncio.sleep(0.001)
        answer = await service.on_broker(_call("memory", {"action": "note", "text": "Tea at 4."}))
        seen = len(slow.parts), service.caught_up.is_set()
        assert await asyncio.to_thread(service.caught_up.wait, 20)
        return answer, *seen

    try:
        answer, parts_done, caught_up = asyncio.run(scenario())
    finally:
        service.close()
    assert answer.ok and answer.output == "noted"
    assert not caught_up and parts_done < 20  # the note did not wait for the whole catch-up
    assert len(slow.parts) == 21  # 200 records in parts of 10, and the part that finds the end


def test_session_updated_during_the_catch_up_indexes_its_session_first(tmp_path, monkeypatch):
    home = tmp_path / "home"
    for n in range(5):
        _log(home, f"s-{n}", [f"filler {m}" for m in range(30)])
    _log(home, "s-late", ["the walrus memo"])
    monkeypatch.setattr(indexer, "PART_RECORDS", 10)
    service = prepare(load(_config(tmp_path)))
    slow = SlowParts(monkeypatch, service.index, wait=0.01)
    slow.gate.set()

    async def scenario():
        service.start_catch_up()
        while not slow.parts:
            await asyncio.sleep(0.001)
        await service.on_loop(SessionUpdated(session="s-late"))
        found = await service.on_broker(_call("recall", {"query": "walrus"}))
        return found, service.index.catching_up

    try:
        found, progress = asyncio.run(scenario())
    finally:
        service.close()
    assert progress is not None and progress[0] < 6  # the background catch-up was still going
    assert found.output.startswith("[1] memory · session s-late")


def _block_writer(service: MemoryService) -> threading.Event:
    """Occupy the writer thread until the returned event is set."""
    release = threading.Event()
    service._writer.submit(WRITE, release.wait, 10)
    return release


def test_a_write_not_started_by_its_deadline_is_not_applied(tmp_path):
    config = _config(tmp_path, "[memory]\nwrite_deadline = 1\n")
    service = prepare(load(config))
    service.write_deadline = 0.05  # the config's floor is 1 s; the test need not wait that long
    home = tmp_path / "home"
    before = (home / "memory/memory.md").read_bytes()

    async def scenario():
        release = _block_writer(service)
        pending = asyncio.ensure_future(
            service.on_broker(
                _call("memory", {"action": "add", "file": "memory", "text": "Owner likes UTC."})
            )
        )
        await asyncio.sleep(0.2)  # past the deadline, still behind the blocked writer
        release.set()
        return await pending

    try:
        answer = asyncio.run(scenario())
    finally:
        service.close()
    assert answer.ok is False and answer.output == NOT_APPLIED
    assert (home / "memory/memory.md").read_bytes() == before
    assert not list((home / "memory/edits").glob("*.jsonl")) or all(
        not p.read_text() for p in (home / "memory/edits").glob("*.jsonl")
    )


def test_an_index_failure_after_a_write_answers_the_applied_sentence(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="memoryd")
    service = prepare(load(_config(tmp_path)))
    home = tmp_path / "home"
    real = service.index.catch_up_notes

    def broken(*_):
        raise ValueError("injected index failure")

    monkeypatch.setattr(service.index, "catch_up_notes", broken)

    async def scenario():
        added = await service.on_broker(
            _call("memory", {"action": "add", "file": "memory", "text": "Owner likes UTC."})
        )
        noted = await service.on_broker(_call("memory", {"action": "note", "text": "Heron seen."}))
        monkeypatch.setattr(service.index, "catch_up_notes", real)
        await service.on_broker(_call("memory", {"action": "note", "text": "Otter seen."}, "c2"))
        # No start catch-up ran here (a served memoryd's reads notes.md first, and a recall waits
        # for a changed notes.md only after it): let the catch-up the note queued run first.
        await service._write(lambda: None)
        found = await service.on_broker(_call("recall", {"query": "heron"}))
        return added, noted, found

    try:
        added, noted, found = asyncio.run(scenario())
    finally:
        service.close()
    assert added.ok and added.output.startswith("memory.md updated (16 of 2,200 characters)")
    assert noted.ok and noted.output == "noted"
    journal = [
        json.loads(line)
        for path in (home / "memory/edits").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert [line["action"] for line in journal] == ["add", "note", "note"]
    # Two writes met the same failure: one line says so, and one that it has passed.
    assert caplog.text.count("not indexed now, caught up later: ValueError: injected index") == 1
    assert caplog.text.count("memory/notes.md: indexed again") == 1
    assert found.output.startswith("[1] memory · note")  # repaired by the next write's catch-up


def test_a_write_during_a_reindex_answers_before_the_reindex_ends(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(home, "s-one", ["the alpha launch is on Thursday"])
    service = prepare(load(_config(tmp_path)))
    service.index.catch_up_all()
    building = threading.Event()
    release = threading.Event()
    real_build = service._rebuild.build  # the build in its child process (rebuild.py)

    def slow_build(*args):
        built = real_build(*args)
        building.set()
        release.wait(10)  # a long build: the writer must stay free meanwhile
        return built

    monkeypatch.setattr(service._rebuild, "build", slow_build)

    async def scenario():
        reindex = asyncio.ensure_future(service.on_admin(Reindex()))
        await asyncio.to_thread(building.wait, 10)
        noted = await service.on_broker(_call("memory", {"action": "note", "text": "Kestrel."}))
        finished_first = reindex.done()
        release.set()
        reindexed = await reindex
        found = await service.on_broker(_call("recall", {"query": "kestrel"}))
        return noted, finished_first, reindexed, found

    try:
        noted, finished_first, reindexed, found = asyncio.run(scenario())
    finally:
        service.close()
    assert noted.ok and noted.output == "noted" and not finished_first
    assert (reindexed.logs, reindexed.records) == (1, 1)
    # The note came after the build read notes.md: the swap's catch-up put it in the new index.
    assert found.output.startswith("[1] memory · note")


def test_an_owner_command_not_started_by_its_deadline_changes_nothing(tmp_path):
    service = prepare(load(_config(tmp_path)))
    service.write_deadline = 0.05
    home = tmp_path / "home"

    async def scenario():
        added = await service.on_broker(
            _call("memory", {"action": "add", "file": "memory", "text": "Owner likes UTC."})
        )
        assert added.ok
        edit = json.loads(next((home / "memory/edits").glob("*.jsonl")).read_text())["id"]
        before = (home / "memory/memory.md").read_bytes()
        release = _block_writer(service)
        pending = asyncio.ensure_future(service.on_admin(MemoryAdmin(command="undo", arg=edit)))
        await asyncio.sleep(0.2)
        release.set()
        with pytest.raises(MemorydError) as refused:
            await pending
        return str(refused.value), before

    try:
        text, before = asyncio.run(scenario())
    finally:
        service.close()
    assert text == NOT_DONE
    assert (home / "memory/memory.md").read_bytes() == before
