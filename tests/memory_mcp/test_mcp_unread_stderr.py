"""A client that takes memory-mcp's stderr as a pipe and never reads it (the MCP spec lets it
ignore stderr) is answered all the same: the log lines that do not fit are dropped and counted,
and one line says how many once stderr is read again. A stderr that is read loses nothing, and
the last lines of the connection are written before memory-mcp ends."""

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from mcp_types.version import LATEST_HANDSHAKE_VERSION

BAD = 3000  # each logs a line: far more than a 64 KiB pipe and the queue hold together
ANSWER_SECONDS = 30.0  # generous: without a queue the answers stop for good
REFUSED = "answered with error -32700"
CLOSED = "the client closed the connection"
DROPPED = "log line(s) dropped"


class Client:
    """memory-mcp over pipes, one bad line at a time, each answer waited for."""

    def __init__(self, home: Path, stderr) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memory_mcp", "--home", str(home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, "BOXMAKER_MCP_STATE": str(home / "state")},
        )
        self.buffer = b""
        init = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
        init["clientInfo"] = {"name": "no stderr reader", "version": "1"}
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
        assert "result" in (self.answer() or {})

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        end = time.monotonic() + ANSWER_SECONDS
        while b"\n" not in self.buffer:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def refused(self, count: int) -> int:
        """How many of count bad lines were answered, stopping at the first that was not."""
        for done in range(count):
            self.send("not json")
            reply = self.answer()
            if reply is None:
                return done
            assert reply["error"]["code"] == -32700, reply
        return count

    def end(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(60)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _read_all(stream, into: list[bytes]) -> threading.Thread:
    reader = threading.Thread(target=lambda: into.append(stream.read()), daemon=True)
    reader.start()
    return reader


def test_a_stderr_never_read_stops_no_answer_and_the_dropped_lines_are_counted(tmp_path):
    client = Client(tmp_path, subprocess.PIPE)
    try:
        assert client.refused(BAD) == BAD
        read: list[bytes] = []
        reader = _read_all(client.process.stderr, read)  # the client reads stderr at last
        assert client.end() == 0
        reader.join(60)
    finally:
        client.kill()
    lines = read[0].decode().splitlines()
    written = sum(REFUSED in line for line in lines)
    # The connection's last line ("the client closed the connection") is one more, dropped and
    # counted too when the queue is still full as the client ends (a busy machine).
    closed = sum(CLOSED in line for line in lines)
    dropped = [int(line.split(" WARNING ")[1].split()[0]) for line in lines if DROPPED in line]
    assert dropped and written + closed + sum(dropped) == BAD + 1, (written, closed, dropped)
    assert CLOSED in lines[-1] and DROPPED not in lines[-1], lines[-3:]


def test_a_stderr_that_is_read_loses_no_line_and_gets_the_last_ones(tmp_path):
    with open(tmp_path / "memory-mcp.log", "wb") as errlog:
        client = Client(tmp_path, errlog)
    try:
        assert client.refused(BAD) == BAD
        assert client.end() == 0
    finally:
        client.kill()
    lines = (tmp_path / "memory-mcp.log").read_text().splitlines()
    assert sum(REFUSED in line for line in lines) == BAD
    assert not [line for line in lines if DROPPED in line]
    assert CLOSED in lines[-1], lines[-3:]


def test_a_stderr_never_read_does_not_keep_memory_mcp_from_ending(tmp_path):
    client = Client(tmp_path, subprocess.PIPE)
    try:
        assert client.refused(BAD) == BAD
        started = time.monotonic()
        assert client.end() == 0
        assert time.monotonic() - started < 30  # the flush waits 2 seconds, then gives up
    finally:
        client.kill()
        assert client.process.stderr is not None
        client.process.stderr.close()
