"""How far memory-mcp reads ahead of its answers: a client that sends requests and never reads
what comes back must not have each read request held as a task without end; and a cancel naming
an id no request can have (a list, an object) is ignored, never a crash."""

import json

import anyio

from memory_mcp import inflight
from memory_mcp.inflight import InFlight
from memory_mcp.stdio import screened


def _requests(n: int):
    async def lines():
        for i in range(n):
            yield json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) + "\n"

    return lines()


async def _refuse(refusal) -> None:
    raise AssertionError(f"refused {refusal}")


def test_reading_waits_while_the_answers_are_not_taken(monkeypatch):
    monkeypatch.setattr(inflight, "MOST", 8)
    in_flight = InFlight()
    got: list[str] = []

    async def run():
        writing = {"now": True}  # the client does not read: the answers wait in the wire
        lines = screened(_requests(30), _refuse, in_flight, 1.0, writing=lambda: writing["now"])

        async def read():
            async for line in lines:
                got.append(line)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            await anyio.sleep(1.5)  # longer than GRACE: a blocked write is not a dropped answer
            assert len(got) == 8
            for i in range(3):  # the client reads three answers
                in_flight.answered(i)
            await anyio.sleep(0.5)
            assert len(got) == 11
            answered = 3
            while answered < 30:  # the client reads every answer as it comes
                for i in range(answered, len(got)):
                    in_flight.answered(i)
                answered = len(got)
                await anyio.sleep(0.05)

    anyio.run(run)
    assert len(got) == 30


def test_requests_the_sdk_never_answers_do_not_stop_the_reading(monkeypatch):
    """Nothing being written and no call to memoryd: the counted ids will never be answered."""
    monkeypatch.setattr(inflight, "MOST", 8)
    in_flight = InFlight()

    async def run():
        lines = screened(_requests(20), _refuse, in_flight, 0.1)
        return [line async for line in lines]

    assert len(anyio.run(run)) == 20


def test_a_cancel_naming_an_id_no_request_can_have_is_ignored():
    in_flight = InFlight()
    in_flight.read({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    for odd in ([1], {"a": 1}, None, 1.5, True):
        params = {"requestId": odd}
        in_flight.read({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
    assert len(in_flight) == 1
    in_flight.read(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    )
    assert len(in_flight) == 0
