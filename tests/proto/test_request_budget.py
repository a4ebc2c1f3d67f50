"""The budget of request bytes being received: what all connections of a process may hold of
requests still arriving, together, and what one connection reads ahead outside it."""

import array
import asyncio
import fcntl
import socket
import termios
import threading
import time

import pytest
import uvloop

from proto import bytebudget
from proto.bytebudget import (
    READ_CHUNK,
    SMALL_FRAME,
    STREAM_LIMIT,
    ByteBudget,
    RequestsBusy,
    bounded_stream,
)
from proto.client import request
from proto.frames import MAX_FRAME
from proto.messages import MemoryAdmin, MemoryAdminReply
from proto.server import serve_unix
from tests.proto.slowframes import Partial, garbage, until
from tests.rawsocket import exchange

LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


def run(coro):
    return asyncio.run(coro)


# --- the budget itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "size,counted",
    [(1, 0), (SMALL_FRAME, 0), (SMALL_FRAME + 1, SMALL_FRAME + 1), (MAX_FRAME, MAX_FRAME)],
)
def test_a_frame_is_counted_while_held_and_given_back_after(size, counted):
    budget = ByteBudget(2 * MAX_FRAME)

    async def go():
        async with budget.hold(size):
            assert budget.used == counted
        assert budget.used == 0

    run(go())


def test_small_frames_go_at_once_when_the_budget_is_spent():
    budget = ByteBudget(MAX_FRAME, wait=5)

    async def go():
        async with budget.hold(MAX_FRAME):
            began = time.monotonic()
            async with budget.hold(SMALL_FRAME):
                pass
            assert time.monotonic() - began < 0.1

    run(go())


def test_a_frame_that_finds_no_room_is_refused_in_one_line_after_the_wait():
    budget = ByteBudget(MAX_FRAME, wait=0.2)

    async def go():
        async with budget.hold(MAX_FRAME):
            began = time.monotonic()
            with pytest.raises(RequestsBusy) as e:
                async with budget.hold(SMALL_FRAME + 1):
                    pass
            assert 0.15 < time.monotonic() - began < 2
            assert budget.waiting == 0
        return str(e.value)

    text = run(go())
    assert "too many large requests" in text and "1 MiB" in text and "\n" not in text
    assert budget.used == 0


def test_waiters_get_room_in_their_order_as_it_is_given_back():
    budget = ByteBudget(2 * MAX_FRAME, wait=5)
    order = []

    async def holder(name, size, hold_for):
        async with budget.hold(size):
            order.append(name)
            await asyncio.sleep(hold_for)

    async def go():
        first = asyncio.create_task(holder("first", 2 * MAX_FRAME, 0.1))
        await asyncio.sleep(0.01)
        big = asyncio.create_task(holder("big", 2 * MAX_FRAME, 0))
        await asyncio.sleep(0.01)
        small = asyncio.create_task(holder("after", SMALL_FRAME + 1, 0))
        await asyncio.sleep(0.01)
        assert budget.waiting == 2  # the later, smaller one does not pass the one before it
        await asyncio.gather(first, big, small)

    run(go())
    assert order == ["first", "big", "after"]
    assert budget.used == 0 and budget.waiting == 0


def test_a_frame_larger_than_the_whole_budget_is_refused_at_once():
    budget = ByteBudget(MAX_FRAME)

    async def go():
        async with budget.hold(MAX_FRAME + 1):
            pass

    with pytest.raises(RequestsBusy):
        run(go())
    assert budget.used == 0


@pytest.mark.parametrize("when", ["waiting", "holding"])
def test_a_cancelled_reader_gives_its_bytes_back(when):
    budget = ByteBudget(MAX_FRAME, wait=5)

    async def go():
        blocker = asyncio.Event()

        async def hold():
            async with budget.hold(MAX_FRAME):
                await blocker.wait()

        first = asyncio.create_task(hold())
        await asyncio.sleep(0.01)
        victim = first
        if when == "waiting":
            victim = asyncio.create_task(hold())
            await asyncio.sleep(0.01)
            assert budget.waiting == 1
        victim.cancel()
        await asyncio.gather(victim, return_exceptions=True)
        blocker.set()
        await asyncio.gather(first, return_exceptions=True)

    run(go())
    assert budget.used == 0 and budget.waiting == 0


def test_a_waiter_on_another_threads_loop_is_woken_there():
    budget = ByteBudget(MAX_FRAME, wait=5)
    held, release = threading.Event(), threading.Event()

    def other_thread():
        async def hold():
            async with budget.hold(MAX_FRAME):
                held.set()
                while not release.is_set():
                    await asyncio.sleep(0.01)

        asyncio.run(hold())

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        assert held.wait(5)

        async def wait_for_room():
            threading.Timer(0.1, release.set).start()
            began = time.monotonic()
            async with budget.hold(MAX_FRAME):
                return time.monotonic() - began

        assert 0.05 < run(wait_for_room()) < 3
    finally:
        release.set()
        thread.join(5)
    assert budget.used == 0


# --- what one connection reads ahead ------------------------------------------------------------


def _unread(sock: socket.socket) -> int:
    """The bytes the kernel still holds for sock (FIONREAD)."""
    count = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
    return count[0]


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
def test_a_connection_not_being_read_takes_little_from_its_socket(loop_name):
    ours, peer = socket.socketpair()
    peer.setblocking(False)
    loop = LOOPS[loop_name]()
    try:

        async def go():
            reader, protocol = bounded_stream(bytearray(READ_CHUNK))
            await loop.connect_accepted_socket(lambda: protocol, sock=ours)
            sent = 0
            for _ in range(50):  # the peer sends all it can while nobody reads the stream
                try:
                    while True:
                        sent += peer.send(b"\0" * 65536)
                except BlockingIOError:
                    pass
                await asyncio.sleep(0.01)
            taken = sent - _unread(ours)
            assert taken <= 2 * STREAM_LIMIT + READ_CHUNK
            peer.shutdown(socket.SHUT_WR)
            assert len(await reader.read()) == sent  # all of it is read once someone reads

        loop.run_until_complete(go())
    finally:
        loop.close()
        peer.close()
        ours.close()


# --- served sockets -----------------------------------------------------------------------------


async def handler(message):
    return MemoryAdminReply(text=f"{message.command} {message.arg}")


class Served:
    def __init__(self, path, loop_name="asyncio", **limits):
        self.loop = LOOPS[loop_name]()
        self.server = self.loop.run_until_complete(
            serve_unix(path, handler, {"memory_admin"}, name="test", **limits)
        )
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self):
        async def shut() -> None:
            self.server.close()
            await asyncio.wait_for(self.server.wait_closed(), 5)

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def serve(tmp_path):
    made = []

    def go(**limits):
        path = str(tmp_path / f"s{len(made)}" / "admin.sock")
        made.append(Served(path, **limits))
        return path, made[-1]

    yield go
    for served in made:
        if not served.loop.is_closed():
            served.close()


@pytest.fixture
def partial():
    made = Partial()
    yield made
    made.close()


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
def test_slow_large_requests_hold_no_more_than_the_budget(serve, partial, loop_name):
    budget = ByteBudget(2 * MAX_FRAME, wait=0.3)
    path, _ = serve(loop_name=loop_name, request_budget=budget, request_timeout=30)
    partial.open(path, count=2, part=600_000)  # whole sends: they were let in and read
    assert until(lambda: budget.used == 2 * MAX_FRAME)

    began = time.monotonic()
    kind, body = exchange(path, garbage(MAX_FRAME, 1000), close_write=False, timeout=10)
    assert kind == "error" and "too many large requests" in body["text"]
    assert "\n" not in body["text"] and 0.2 < time.monotonic() - began < 5

    began = time.monotonic()
    assert request(path, MemoryAdmin(command="log", arg="1")).text == "log 1"
    kind, body = exchange(path, garbage(SMALL_FRAME, SMALL_FRAME), timeout=10)
    assert kind == "error" and "not valid MessagePack" in body["text"]
    assert time.monotonic() - began < 0.5  # small frames are served at once

    partial.close()
    assert until(lambda: budget.used == 0)  # given back when the peers went away
    kind, body = exchange(path, garbage(MAX_FRAME, MAX_FRAME), timeout=10)
    assert kind == "error" and "not valid MessagePack" in body["text"]
    assert budget.used == 0 and budget.waiting == 0


def test_a_waiting_request_is_let_in_when_room_is_given_back(serve, partial):
    budget = ByteBudget(MAX_FRAME, wait=5)
    path, _ = serve(request_budget=budget, request_timeout=30)
    partial.open(path, part=300_000)
    assert until(lambda: budget.used == MAX_FRAME)
    threading.Timer(0.3, partial.close).start()
    kind, body = exchange(path, garbage(MAX_FRAME, MAX_FRAME), timeout=10)
    assert kind == "error" and "not valid MessagePack" in body["text"]
    assert until(lambda: budget.used == 0 and budget.waiting == 0)


@pytest.mark.parametrize("ending", ["deadline", "server stops"])
def test_a_request_cut_any_way_gives_its_bytes_back(serve, partial, ending):
    budget = ByteBudget(4 * MAX_FRAME, wait=5)
    timeout = 1.5 if ending == "deadline" else 30
    path, served = serve(request_budget=budget, request_timeout=timeout)
    partial.open(path, count=2, part=100_000)
    assert until(lambda: budget.used == 2 * MAX_FRAME)
    if ending == "server stops":
        served.close()
    assert until(lambda: budget.used == 0)


def test_every_socket_of_a_process_shares_one_budget_by_default(serve, partial):
    first, _ = serve(request_timeout=30)
    second, _ = serve(request_timeout=30)
    before = bytebudget.REQUESTS.used
    partial.open(first, part=100_000)
    partial.open(second, part=100_000)
    assert until(lambda: bytebudget.REQUESTS.used == before + 2 * MAX_FRAME)
    partial.close()
    assert until(lambda: bytebudget.REQUESTS.used == before)
