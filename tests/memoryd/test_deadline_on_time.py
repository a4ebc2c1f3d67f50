"""A memory call or an owner's write queued behind a long writer job (a recall mode's build) is
answered "not applied" when its deadline passes, while that job still runs, and it never runs
afterwards. In-process, on a real home: the writer is held by a job that waits for an event the
test sets only once the answer came, so nothing here depends on timing but the deadline itself.
"""

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from memoryd.brokercalls import NOT_APPLIED
from memoryd.config import load
from memoryd.errors import MemorydError
from memoryd.server import prepare
from memoryd.service import NOT_DONE
from memoryd.writer import WRITE, NotStarted, Writer, in_time
from proto.messages import MemoryAdmin, MemoryCall, ToolRequest

SOUL = "You are a careful personal agent.\n"
# Long enough for any loaded machine: the answer must come while the writer is still held.
PATIENCE = 20.0


def _service(tmp_path: Path):
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{tmp_path / "home"}"\n')
    service = prepare(load(config))
    service.write_deadline = 0.05  # the config's floor is 1 s; the test need not wait that long
    return service


def _add(text: str, call_id: str = "c1") -> MemoryCall:
    args = json.dumps({"action": "add", "file": "memory", "text": text})
    req = ToolRequest(session="s-clean", call_id=call_id, tool="memory", arguments=args)
    return MemoryCall(request=req, taint="private", untrusted=False)


def _journal(home: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted((home / "memory/edits").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def _hold(service) -> tuple[threading.Event, threading.Event]:
    """Occupy the writer until the second event is set; the first is set once it runs."""
    running, release = threading.Event(), threading.Event()

    def long_job() -> None:
        running.set()
        release.wait(PATIENCE * 2)

    service._writer.submit(WRITE, long_job)
    return running, release


def test_a_memory_call_behind_a_long_job_is_answered_at_its_deadline(tmp_path):
    service = _service(tmp_path)
    home = tmp_path / "home"
    before = (home / "memory/memory.md").read_bytes()

    async def scenario():
        running, release = _hold(service)
        await asyncio.to_thread(running.wait, PATIENCE)
        try:
            answer = await asyncio.wait_for(service.on_broker(_add("Owner likes UTC.")), PATIENCE)
        finally:
            release.set()
        await service._write(lambda: None)  # the writer ran everything queued after the hold
        return answer

    try:
        answer = asyncio.run(scenario())
    finally:
        service.close()
    assert answer.ok is False and answer.output == NOT_APPLIED
    # Not run once the long job ended either: "not applied" stays true.
    assert (home / "memory/memory.md").read_bytes() == before
    assert _journal(home) == []


def test_an_owner_write_behind_a_long_job_is_refused_at_its_deadline(tmp_path):
    service = _service(tmp_path)
    home = tmp_path / "home"

    async def scenario():
        added = await service.on_broker(_add("Owner likes UTC."))
        assert added.ok
        edit = _journal(home)[0]["id"]
        running, release = _hold(service)
        await asyncio.to_thread(running.wait, PATIENCE)
        try:
            with pytest.raises(MemorydError) as refused:
                await asyncio.wait_for(
                    service.on_admin(MemoryAdmin(command="undo", arg=edit)), PATIENCE
                )
        finally:
            release.set()
        await service._write(lambda: None)
        return str(refused.value)

    try:
        text = asyncio.run(scenario())
    finally:
        service.close()
    assert text == NOT_DONE
    assert [line["action"] for line in _journal(home)] == ["add"]  # the undo never ran
    assert "Owner likes UTC." in (home / "memory/memory.md").read_text()


def test_a_job_already_running_at_its_deadline_is_waited_for():
    writer = Writer()
    started, release = threading.Event(), threading.Event()

    def job() -> str:
        started.set()
        release.wait(PATIENCE)
        return "done"

    async def scenario():
        future = writer.submit(WRITE, job, deadline=time.monotonic() + 60)
        await asyncio.to_thread(started.wait, PATIENCE)
        waiting = asyncio.ensure_future(in_time(future, time.monotonic() + 0.01))
        await asyncio.sleep(0.05)  # past the deadline: the job runs, so it is waited for
        assert not waiting.done()
        release.set()
        return await asyncio.wait_for(waiting, PATIENCE)

    try:
        assert asyncio.run(scenario()) == "done"
    finally:
        release.set()
        writer.shutdown()


def test_a_queued_job_answered_not_started_never_runs():
    writer = Writer()
    release = threading.Event()
    ran: list[str] = []
    writer.submit(WRITE, release.wait, PATIENCE)

    async def scenario():
        future = writer.submit(WRITE, ran.append, "late", deadline=time.monotonic() + 0.01)
        with pytest.raises(NotStarted):
            await asyncio.wait_for(in_time(future, time.monotonic() + 0.01), PATIENCE)

    try:
        asyncio.run(scenario())
        release.set()
        writer.submit(WRITE, lambda: None).result(PATIENCE)
    finally:
        release.set()
        writer.shutdown()
    assert ran == []


def test_a_caller_that_stops_waiting_leaves_its_queued_job_unrun():
    writer = Writer()
    release = threading.Event()
    ran: list[str] = []
    writer.submit(WRITE, release.wait, PATIENCE)

    async def scenario():
        future = writer.submit(WRITE, ran.append, "abandoned", deadline=time.monotonic() + 60)
        waiting = asyncio.ensure_future(in_time(future, time.monotonic() + 60))
        await asyncio.sleep(0)  # it waits now
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return future

    try:
        future = asyncio.run(scenario())
        release.set()
        writer.submit(WRITE, lambda: None).result(PATIENCE)
    finally:
        release.set()
        writer.shutdown()
    assert future.cancelled() and ran == []
