"""Peers that connect to the control socket and stay idle cannot leave the driver unanswered: an
idle connection is closed after CONTROL_REQUEST_SECONDS, and a connection past the 32 the socket
holds is answered at once with one line that it is busy, not left in the listen queue. The driver
tells a loopd-shim that is not running (no socket, or nobody listening) from one that is busy
(its queue full, or no answer in time), each in one line saying what to do."""

import asyncio
import contextlib
import socket
import threading
import time

import pytest
from typer.testing import CliRunner

from loopd_shim import cli, server
from loopd_shim.server import CONTROL_CONNECTIONS, serve
from proto.client import RemoteError
from proto.messages import SessionStart, SessionStarted


@contextlib.contextmanager
def served(fakes):
    stop = asyncio.Event()
    future = asyncio.run_coroutine_threadsafe(serve(fakes.config, stop), fakes.background.loop)
    for _ in range(200):
        if fakes.config.control_socket.exists() or future.done():
            break
        threading.Event().wait(0.01)
    if future.done():
        future.result()
    try:
        yield fakes
    finally:
        fakes.background.loop.call_soon_threadsafe(stop.set)
        future.result(5)


@contextlib.contextmanager
def idle_peers(path, count: int):
    peers = []
    try:
        for _ in range(count):
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peers.append(peer)
            peer.connect(str(path))
        time.sleep(0.3)  # taken by the shim's accept loop
        yield peers
    finally:
        for peer in peers:
            peer.close()


def drive(home_or_socket, *args, **env):
    env = {"BOXMAKER_CONTROL_SOCKET": str(home_or_socket), "BOXMAKER_HOME": None, **env}
    return CliRunner(env=env).invoke(cli.app, list(args))


def test_a_peer_past_the_cap_of_idle_ones_is_answered_busy_at_once(stack):
    with idle_peers(stack.config.control_socket, CONTROL_CONNECTIONS):
        began = time.monotonic()
        with pytest.raises(RemoteError) as busy:
            stack.ask(SessionStart(session="s-busy"), timeout=3)
        assert time.monotonic() - began < 2
        text = str(busy.value)
        assert text.startswith("loopd-shim control is busy: 32 connections open, its cap;")
        assert "nothing was done" in text and "\n" not in text
        # and the driver prints that line as it is
        result = drive(stack.config.control_socket, "start")
        assert result.exit_code == 1
        assert result.stderr.startswith("loopd-shim: loopd-shim control is busy: 32 connections")
    assert not (stack.config.sessions / "s-busy").exists()


def test_idle_connections_are_closed_after_the_timeout(fakes, monkeypatch):
    monkeypatch.setattr(server, "CONTROL_REQUEST_SECONDS", 0.5)
    with served(fakes) as stack:
        began = time.monotonic()
        with idle_peers(stack.config.control_socket, CONTROL_CONNECTIONS) as peers:
            peers[0].settimeout(3)
            said = peers[0].recv(4096)
            assert b"request not complete in time" in said
            assert 0.4 < time.monotonic() - began < 2
            assert peers[0].recv(4096) == b""  # closed
            time.sleep(0.3)
            # every idle one is gone: a start is served again
            started = stack.ask(SessionStart(session="s-after"), timeout=3)
            assert isinstance(started, SessionStarted)


def test_no_socket_is_not_running(home):
    result = drive(home / "run" / "loop-control" / "control.sock", "start")
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("loopd-shim: loopd-shim is not running: nothing answers on ")
    assert (
        "there is no socket there; nothing was done: start the stack with scripts/stack up" in line
    )
    assert line.endswith("(runbook: loopd-unreachable)")


def test_a_socket_nobody_listens_on_is_not_running(home):
    path = home / "control.sock"
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))
    left.close()  # the file stays, as a killed loopd-shim leaves it
    result = drive(path, "say", "s-x", "hello")
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert "loopd-shim is not running" in line and "nobody listens on it" in line
    assert "scripts/stack up" in line


def test_a_full_listen_queue_is_busy(home):
    path = home / "control.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(0)
    queued = []
    try:
        while True:  # fill the queue: a process listens and accepts none
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.setblocking(False)
            queued.append(peer)
            try:
                peer.connect(str(path))
            except BlockingIOError:
                break
        result = drive(path, "start")
    finally:
        for peer in queued:
            peer.close()
        listener.close()
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("loopd-shim: loopd-shim is running but busy: ")
    assert "try again in a few seconds" in line and "not running" not in line


def test_no_answer_in_time_is_busy(home, monkeypatch):
    monkeypatch.setattr(cli, "DRIVER_TIMEOUT", 0.5)
    path = home / "control.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    try:
        result = drive(path, "say", "s-x", "hello")
    finally:
        listener.close()
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert "loopd-shim is running but busy: it took the request on" in line
    assert "did not answer in 0.5 seconds, so what was asked may or may not have been done" in line
