"""A socket served with busy slots: a connection over its cap is answered at once with a one-line
busy refusal (its request never handled), so that a probe is not queued behind the work it
vouches for; past the busy slots too, connections wait in the listen queue."""

import asyncio
import socket
import threading
import time

import pytest

from proto.client import RemoteError, request, request_raw
from proto.frames import encode_frame, recv_payload
from proto.messages import HEALTH_PROBE, MemoryAdmin, MemoryAdminReply
from proto.server import serve_unix

HANDLED: list[str] = []


async def handler(message):
    HANDLED.append(message.arg)
    return MemoryAdminReply(text=f"{message.command} {message.arg}")


class Served:
    def __init__(self, path: str, **limits):
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            serve_unix(path, handler, {"memory_admin"}, name="test socket", **limits)
        )
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        async def shut() -> None:
            self.server.close()
            await asyncio.wait_for(self.server.wait_closed(), 5)

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def served(tmp_path):
    HANDLED.clear()
    path = str(tmp_path / "run" / "admin.sock")
    server = Served(path, max_connections=1, busy_slots=1, request_timeout=30)
    yield path, server
    server.close()


def connected(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5.0)
    s.connect(path)
    return s


def taken(server: Served, n: int) -> None:
    """Wait until the server has accepted n connections within its cap."""
    deadline = time.monotonic() + 5
    while server.server.open_connections < n and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.server.open_connections == n


def test_a_connection_over_the_cap_is_refused_busy_at_once_and_not_handled(served):
    path, server = served
    work = connected(path)  # the one connection the cap allows, at work (its request unsent)
    try:
        taken(server, 1)
        began = time.monotonic()
        assert request_raw(path, "memory_admin", HEALTH_PROBE, timeout=5.0) == "error"
        with pytest.raises(RemoteError) as refused:
            request(path, MemoryAdmin(command="log", arg="over"), timeout=5.0)
        assert time.monotonic() - began < 2.0
        assert str(refused.value) == (
            "test socket is busy: 1 connection open, its cap; this request was not read and "
            "nothing was done: ask again when one of them is answered"
        )
        assert "over" not in HANDLED
        work.sendall(encode_frame("memory_admin", {"command": "log", "arg": "work"}))
        assert b"log work" in recv_payload(work)
    finally:
        work.close()
    deadline = time.monotonic() + 5
    while server.server.open_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert request(path, MemoryAdmin(command="log", arg="after"), timeout=5.0).text == "log after"


def test_a_peer_still_sending_a_large_request_reads_the_busy_refusal(served):
    path, server = served
    work = connected(path)
    try:
        taken(server, 1)
        body = {"command": "import", "arg": "x" * 1_000_000}  # more than the socket buffers
        assert request_raw(path, "memory_admin", body, timeout=10.0) == "error"
    finally:
        work.close()


def test_past_the_busy_slots_a_connection_waits_in_the_listen_queue(served):
    path, server = served
    work = connected(path)
    lingering = connected(path)  # takes the busy slot and neither sends nor closes
    extra = connected(path)
    try:
        taken(server, 1)
        assert recv_payload(lingering)  # its refusal; the slot is held until it closes
        extra.sendall(encode_frame("memory_admin", {"command": "log", "arg": "extra"}))
        extra.settimeout(0.5)
        with pytest.raises(TimeoutError):
            extra.recv(1)  # neither accepted nor answered
        lingering.close()
        extra.settimeout(5.0)
        assert b"is busy" in recv_payload(extra)
        assert "extra" not in HANDLED
    finally:
        for s in (work, lingering, extra):
            s.close()
