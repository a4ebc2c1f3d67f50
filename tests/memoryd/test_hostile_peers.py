"""memoryd as a process against peers that flood, dawdle, never read, or send hostile bodies.
Nothing here is timed beyond generous bounds."""

import json
import resource
import socket
import struct
import time

import msgpack
import pytest

from proto.client import RemoteError, request, request_raw
from proto.errors import PeerClosed
from proto.frames import MAX_FRAME, encode_frame
from proto.messages import HEALTH_PROBE, MemoryAdmin, MemoryBlock, MemoryCall, ToolRequest
from tests.memoryd_process import MemorydProcess
from tests.rawsocket import exchange


@pytest.fixture(autouse=True)
def enough_descriptors():
    """This test process holds hundreds of connections: raise its own soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def start(tmp_path):
    started = []

    def go(extra_config: str = "", nofile: int | None = None) -> MemorydProcess:
        proc = MemorydProcess(tmp_path, extra_config, nofile=nofile).start()
        started.append(proc)
        return proc

    yield go
    for proc in started:
        proc.stop()


def hold(path, n: int, within: float = 10.0) -> list[socket.socket]:
    """Open n idle connections to path, waiting while the listen queue is full, as a flooding
    peer would (the server may close those over its cap: they are held all the same)."""
    held = []
    deadline = time.monotonic() + within
    while len(held) < n and time.monotonic() < deadline:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1.0)
        try:
            s.connect(str(path))
        except OSError:
            s.close()
            time.sleep(0.005)
            continue
        held.append(s)
    return held


def hold_served(path, within: float = 10.0) -> list[socket.socket]:
    """One idle connection the server took as work, not one it answered busy: a connection the
    start's own check left may still hold the cap for a moment, and a connection over the cap is
    sent its refusal at once, where one taken as work is sent nothing until it asks."""
    deadline = time.monotonic() + within
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(path))
        s.settimeout(0.3)
        try:
            refused = s.recv(1)
        except TimeoutError:
            s.settimeout(1.0)
            return [s]
        s.close()
        if time.monotonic() > deadline:
            raise AssertionError(f"every connection was answered busy ({refused!r})")
        time.sleep(0.05)


def block_soon(proc: MemorydProcess, within: float = 5.0) -> str:
    """The memory block from the loopd socket, once the server has seen the flood go."""
    deadline = time.monotonic() + within
    while True:
        try:
            return request(proc.loop_socket, MemoryBlock(), 10.0).text
        except PeerClosed:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def recall(proc: MemorydProcess, timeout: float = 10.0):
    req = ToolRequest(
        session="s1", call_id="c1", tool="recall", arguments=json.dumps({"query": "anything"})
    )
    return request(
        proc.broker_socket, MemoryCall(request=req, taint="private", untrusted=False), timeout
    )


def test_a_flooded_loopd_socket_leaves_the_broker_and_owner_sockets_answering(start):
    # As in the containers but smaller: 256 descriptors, and more idle connections than that on
    # the loopd socket. Each must still answer the broker and the owner.
    proc = start("[limits]\nrequest_seconds = 60\n", nofile=256)
    held = hold(proc.loop_socket, 300)
    try:
        for _ in range(5):
            assert recall(proc).ok
            assert request(proc.admin_socket, MemoryAdmin(command="log", arg="1"), 10.0).text
        assert "connection caps cut to" in proc.log.read_text()
    finally:
        for s in held:
            s.close()
    assert isinstance(block_soon(proc), str)


def test_a_connection_over_the_cap_waits_until_one_ends(start):
    proc = start("[limits]\nloop_connections = 4\nrequest_seconds = 60\n")
    held = hold(proc.loop_socket, 4)
    time.sleep(0.3)
    extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    extra.settimeout(1.0)
    extra.connect(str(proc.loop_socket))
    extra.sendall(encode_frame("memory_block", {}))
    try:
        with pytest.raises(TimeoutError):
            extra.recv(100)  # not accepted: it waits in the listen queue
        assert recall(proc).ok  # another socket is not touched by this one's cap
        held.pop().close()
        extra.settimeout(5.0)
        assert extra.recv(100)  # accepted once a connection of its socket ended
    finally:
        extra.close()
        for s in held:
            s.close()
    assert "4 connections open, the cap" in proc.log.read_text()
    assert isinstance(block_soon(proc), str)


def test_the_owner_socket_cut_to_one_connection_answers_one_more_busy_at_once(start):
    # 64 descriptors leave the owner socket one connection: while that one is at work, a health
    # probe (bxctl's, on a long command) and another command are answered busy, not queued.
    proc = start("[limits]\nrequest_seconds = 60\n", nofile=64)
    assert "owner 1" in proc.log.read_text()
    work = hold_served(proc.admin_socket)
    try:
        time.sleep(0.3)
        began = time.monotonic()
        assert request_raw(proc.admin_socket, "memory_admin", HEALTH_PROBE, 5.0) == "error"
        with pytest.raises(RemoteError, match="memoryd owner socket is busy: 1 connection open"):
            request(proc.admin_socket, MemoryAdmin(command="log", arg="1"), 5.0)
        assert time.monotonic() - began < 3.0
    finally:
        for s in work:
            s.close()
    time.sleep(0.3)
    assert request(proc.admin_socket, MemoryAdmin(command="log", arg="1"), 10.0).text
    assert "new ones are answered busy" in proc.log.read_text()


def test_a_slow_sender_is_cut_at_the_request_deadline(start):
    proc = start("[limits]\nrequest_seconds = 0.5\n")
    frame = encode_frame("memory_block", {})
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5.0)
    s.connect(str(proc.loop_socket))
    s.sendall(frame[:3])
    began = time.monotonic()
    data = s.recv(65536)
    assert time.monotonic() - began < 3.0
    assert b"not complete in time" in data
    s.close()


def test_a_peer_that_never_reads_its_reply_is_cut(start, tmp_path):
    # review on: the staged edits make `pending` a long reply that the peer never reads.
    proc = start("[memory]\nreview = true\n[limits]\nreply_seconds = 0.5\n")
    text = "a fact worth keeping " * 90
    for n in range(400):
        args = {"action": "add", "file": "memory", "text": f"{n} {text}"}
        req = ToolRequest(session="s1", call_id=f"c{n}", tool="memory", arguments=json.dumps(args))
        request(proc.broker_socket, MemoryCall(request=req, taint="private", untrusted=False))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(str(proc.admin_socket))
    s.sendall(encode_frame("memory_admin", {"command": "pending", "arg": ""}))
    time.sleep(2.0)  # never read, past the deadline
    s.settimeout(5.0)
    got = b""
    try:
        while chunk := s.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    s.close()
    (length,) = struct.unpack(">I", got[:4])
    assert len(got) - 4 < length, "the whole reply waited for a peer that did not read"
    assert "did not read its" in proc.log.read_text()


def test_no_reply_is_ever_larger_than_a_frame(start):
    # 520 staged edits of about 2,100 characters: `pending` would be over MAX_FRAME.
    proc = start("[memory]\nreview = true\n")
    text = "x" * 2_090
    for n in range(520):
        args = {"action": "add", "file": "memory", "text": f"{n:04d} {text}"}
        req = ToolRequest(session="s1", call_id=f"c{n}", tool="memory", arguments=json.dumps(args))
        request(proc.broker_socket, MemoryCall(request=req, taint="private", untrusted=False))
    try:
        reply = request(proc.admin_socket, MemoryAdmin(command="pending", arg=""))
        assert len(reply.text.encode()) < MAX_FRAME  # paged (engineer i17's part)
    except RemoteError as e:
        assert "too large" in str(e)
        assert "was not sent" in proc.log.read_text()


def bad_body_frame(body: dict) -> bytes:
    payload = msgpack.packb({"kind": "memory_admin", "body": body}, use_bin_type=True)
    return struct.pack(">I", len(payload)) + payload


def test_a_body_of_90000_unknown_keys_gets_a_short_error(start):
    proc = start()
    body = {"command": "log", "arg": "1", **{f"key{n:06d}": 1 for n in range(90_000)}}
    frame = bad_body_frame(body)
    assert 600_000 < len(frame) < MAX_FRAME
    began = time.monotonic()
    kind, reply = exchange(proc.admin_socket, frame, timeout=30.0)
    assert kind == "error"
    assert len(reply["text"]) < 1000
    assert "map over 256 keys" in reply["text"]
    assert time.monotonic() - began < 5.0
    # the other sockets answered meanwhile and after
    assert recall(proc).ok
    log = proc.log.read_text()
    assert "Traceback" not in log
    assert max(len(line) for line in log.splitlines()) < 5000


def test_a_peer_string_cannot_forge_a_log_line(start):
    proc = start()
    forged = "\x1b[2J\nmemoryd: ERROR forged"
    kind, reply = exchange(proc.admin_socket, bad_body_frame({"command": "log", forged: 1}))
    assert kind == "error"
    kind, reply = exchange(
        proc.admin_socket, bad_body_frame({"command": "log", "arg": forged + "x" * 300})
    )
    assert kind == "error"
    log = proc.log.read_text()
    assert not any(line.startswith("memoryd: ERROR forged") for line in log.splitlines())
    assert "\x1b" not in log
    assert "forged" in log  # it was logged, escaped
