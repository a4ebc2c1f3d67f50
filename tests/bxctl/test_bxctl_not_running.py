"""bxctl tells a memoryd that is not running (no socket, or a socket nobody listens on: start the
stack) from one that is running but busy (its listen queue full: ask again), each in one line
saying what to do, told apart by the connect's errno, never by an error's text."""

import shutil
import socket
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from proto.silent import Silence, silence

runner = CliRunner()


@pytest.fixture
def short():
    """A short folder: socket paths must stay under 108 bytes."""
    path = Path(tempfile.mkdtemp(prefix="bxnr-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def said(path: Path) -> str:
    result = runner.invoke(
        app, ["memory", "log", "--memory-socket", str(path)], env={"BOXMAKER_HOME": None}
    )
    assert result.exit_code == 3, result.output
    [line] = result.stderr.splitlines()
    return line


def test_no_socket_is_not_running(short):
    path = short / "admin.sock"
    assert silence(path) is Silence.NO_SOCKET
    line = said(path)
    assert line.startswith(f"bxctl: memoryd is not answering on {path}: it is not running")
    assert (
        "(there is no socket there); nothing was sent: start the stack with scripts/stack up"
        in (line)
    )
    assert line.endswith("(runbook: memoryd-unreachable)")


def test_a_socket_nobody_listens_on_is_not_running(short):
    path = short / "admin.sock"
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))
    left.close()  # the file stays, as a killed memoryd leaves it
    assert silence(path) is Silence.REFUSED
    line = said(path)
    assert "it is not running (nobody listens on the socket" in line
    assert "scripts/stack up" in line


def test_a_full_listen_queue_is_busy(short):
    path = short / "admin.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(0)
    queued = []
    try:
        while True:  # a process listens and accepts none: fill its queue
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.setblocking(False)
            queued.append(peer)
            try:
                peer.connect(str(path))
            except BlockingIOError:
                break
        assert silence(path) is Silence.BUSY
        line = said(path)
    finally:
        for peer in queued:
            peer.close()
        listener.close()
    assert "it is running but busy" in line and "not running" not in line
    assert "ask again in a few seconds" in line
