"""loopd's memory_block is answered while every reader is taken by slow recalls (recalls of the
commonest words cost up to a core's second each at a million records): a session starts however
many the agent's other sessions have queued."""

import asyncio
import json
import threading

import pytest

from memoryd.errors import MemorydError
from memoryd.owner import dispatch
from proto import peer
from proto.messages import MemoryBlock, MemoryBlockReply, MemoryCall, ToolRequest
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _recall(n: int) -> MemoryCall:
    req = ToolRequest(
        session="mm-busy",
        call_id=f"r{n}",
        tool="recall",
        arguments=json.dumps({"query": "the"}),
    )
    return MemoryCall(request=req, taint="private", untrusted=False)


def test_the_block_is_served_while_recalls_hold_every_reader(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "Kept."})
    release = threading.Event()
    slow = md.service.recaller.recall

    def held(*args, **kwargs):
        release.wait(30)
        return slow(*args, **kwargs)

    monkeypatch.setattr(md.service.recaller, "recall", held)

    async def scenario():
        recalls = [asyncio.create_task(md.service.on_broker(_recall(n))) for n in range(12)]
        await asyncio.sleep(0.2)  # every reader waits in a recall, the others are queued
        try:
            block = await asyncio.wait_for(md.service.on_loop(MemoryBlock()), 5)
        finally:
            release.set()
        answers = await asyncio.gather(*recalls)
        return block, answers

    block, answers = asyncio.run(scenario())
    assert isinstance(block, MemoryBlockReply) and "Kept." in block.text
    assert all(answer.ok for answer in answers)


def test_a_queued_recall_whose_caller_gave_up_is_not_run(md, monkeypatch):
    release = threading.Event()
    slow = md.service.recaller.recall
    queries: list[str] = []

    def held(query, *args, **kwargs):
        queries.append(query)
        release.wait(30)
        return slow(query, *args, **kwargs)

    monkeypatch.setattr(md.service.recaller, "recall", held)

    def gave_up() -> bool:
        return True

    async def given_up_on():
        peer.hold(gave_up)  # this task's connection: its caller closed it while it waited
        return await md.service.on_broker(_recall(99))

    async def scenario():
        busy = [asyncio.create_task(md.service.on_broker(_recall(n))) for n in range(4)]
        await asyncio.sleep(0.2)  # every reader waits in a recall
        late = asyncio.create_task(given_up_on())
        await asyncio.sleep(0.2)
        release.set()
        return await late, await asyncio.gather(*busy)

    late, busy = asyncio.run(scenario())
    assert not late.ok and "stopped waiting" in late.output
    assert len(queries) == 4 and all(answer.ok for answer in busy)


@pytest.mark.parametrize(("command", "arg"), [("stats", '{"days": 30}'), ("log", "")])
def test_an_owner_read_whose_caller_hung_up_is_not_run(md, command, arg, monkeypatch):
    """Hundreds of stats from clients that hung up must not queue a session's recall behind
    them: a read whose caller closed its connection is not run."""
    ran: list[str] = []
    real = dispatch.lookup

    def counted(name, arg):
        kind, run = real(name, arg)
        return kind, lambda service: ran.append(name) or run(service)

    monkeypatch.setattr(dispatch, "lookup", counted)

    async def hung_up():
        peer.hold(lambda: True)
        return await md.service._admin(command, arg)

    async def waiting():
        peer.hold(lambda: False)
        return await md.service._admin(command, arg)

    with pytest.raises(MemorydError, match=f"memory {command} not run: its caller stopped"):
        asyncio.run(hung_up())
    assert ran == []
    asyncio.run(waiting())
    assert ran == [command]
