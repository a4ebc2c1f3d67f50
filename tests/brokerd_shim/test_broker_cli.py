"""brokerd-shim as a process: serve, answer, stop on SIGTERM, refuse to start with one line.

The restart of item 5 is done here with real processes: a fetch taints the session, the process
is stopped and started again, and the memory add that follows still reaches memoryd as untrusted.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from proto.client import request
from proto.messages import ToolRequest, ToolRequestMessage

from .conftest import EXAMPLE_GRANTS, NOTE_ANSWER, FakeMemoryd, Stack, write_config

BIN = Path(sys.executable).parent / "brokerd-shim"


def spawn(config: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN), "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BOXMAKER_HOME": "/nonexistent"},
    )


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"brokerd-shim exited: {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("brokerd-shim did not create its socket")
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    return err


def call(socket: Path, tool: str, arguments: str, call_id: str):
    message = ToolRequestMessage(
        request=ToolRequest(session="mm-proc", call_id=call_id, tool=tool, arguments=arguments)
    )
    return request(socket, message, timeout=10)


def test_serve_restart_and_stop(home, loop_thread):
    config = write_config(home)
    shutil.copy(EXAMPLE_GRANTS / "http_fetch.toml", home / "grants" / "http_fetch.toml")
    fake = Stack(home, config, loop_thread, FakeMemoryd())
    fake.start_memoryd()
    socket = fake.socket

    process = spawn(config)
    wait_for(socket, process)
    fetched = call(socket, "http_fetch", '{"url": "https://example.org/notes"}', "p1")
    assert fetched.ok and fetched.label.untrusted
    err = stop(process)
    assert not socket.exists()
    assert "serving" in err and "stopped" in err

    process = spawn(config)
    wait_for(socket, process)
    added = call(socket, "memory", '{"action": "add", "file": "memory", "text": "March"}', "p2")
    stop(process)
    assert added.output == NOTE_ANSWER
    assert fake.memoryd.calls[-1].untrusted is True
    fake.stop_memoryd()
    # each allowed call: its allowing line before it ran, its outcome after
    assert len(fake.audit_lines()) == 4


def test_bad_config_is_one_line_and_non_zero(home):
    config = home / "brokerd.toml"
    config.write_text("[memory]\nsokcet = 'x'\n")
    process = spawn(config)
    _, err = process.communicate(timeout=10)
    assert process.returncode == 2
    assert err.splitlines() == [f"brokerd-shim: {config}: unknown key sokcet in [memory]"]


def test_a_second_brokerd_shim_on_one_home_or_one_socket_is_refused(home):
    config = write_config(home)
    first = spawn(config)
    socket = home / "run" / "loop-broker" / "broker.sock"
    wait_for(socket, first)
    before = socket.stat().st_ino
    try:
        # The same home: refused by its lock before it reads or serves anything.
        second = spawn(config)
        _, err = second.communicate(timeout=10)
        assert second.returncode == 2
        assert err.splitlines() == [
            f"brokerd-shim: another brokerd-shim is running (it holds the lock on"
            f" {home / 'ledger'}); stop it first"
        ]
        # Another home serving the same socket: refused by the socket's probe.
        other = home / "other"
        other.mkdir(mode=0o700)
        other_config = write_config(other, extra=f'[broker]\nsocket = "{socket}"\n')
        third = spawn(other_config)
        _, err = third.communicate(timeout=10)
        assert third.returncode == 2
        assert err.splitlines() == [f"brokerd-shim: {socket} is served by another live process"]
        assert socket.stat().st_ino == before
    finally:
        stop(first)
    # The lock goes with the process: the next start takes it.
    again = spawn(config)
    try:
        wait_for(socket, again)
    finally:
        stop(again)
