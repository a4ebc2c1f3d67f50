"""A client that stops reading memory-mcp's stdout (it closed its end of the pipe) but keeps stdin
open: the first answer that cannot be written ends memory-mcp at once, with one log line and no
traceback, even while a memory write is with memoryd (memoryd applies what it read all the same,
and the line says so). Waiting for stdin to close would keep the process for as long as the
client lives."""

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from tests.integration.stack import short_temp_home
from tests.memory_mcp.fake_memoryd import FakeMemoryd

TIMEOUT = 30.0  # memory-mcp's --timeout: a write memoryd holds is not waited for
QUICK = 5.0  # how soon memory-mcp must end once an answer cannot be written
ADD = {"action": "add", "file": "user", "text": "Prefers answers in UTC."}
WRITE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "memory", "arguments": ADD},
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
# requests whose answer goes to the closed stdout: name -> line
UNWRITABLE = {
    "a ping": json.dumps(PING),
    "a tools/list": json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    "a line that is not JSON, answered with an error": "{not json",
}


class Process:
    """memory-mcp on a home, initialised, its stdout's read end closed, its stdin kept open."""

    def __init__(self, home: Path) -> None:
        self.log = home / "memory-mcp.log"
        with open(self.log, "wb") as errlog:
            self.popen = subprocess.Popen(
                [
                    *(sys.executable, "-m", "memory_mcp", "--home", str(home)),
                    *("--trust", "trusted", "--timeout", str(TIMEOUT)),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )
        initialize = {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "stdout closer", "version": "1"},
        }
        self.send(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize})
        )
        assert self.popen.stdout is not None
        assert json.loads(self.popen.stdout.readline())["id"] == 0
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.popen.stdout.close()  # the only read end: memory-mcp's next write fails

    def send(self, line: str) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write((line + "\n").encode())
        self.popen.stdin.flush()

    def ended_within(self, wait: float) -> float | None:
        """How long the process took to end, stdin still open; None if it did not within wait."""
        started = time.monotonic()
        try:
            self.popen.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        return time.monotonic() - started

    def stderr(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        assert self.popen.stdin is not None
        try:
            self.popen.stdin.close()
        except BrokenPipeError:
            pass


@contextmanager
def memory_mcp(memoryd_mode: str = "answer") -> Iterator[tuple[Process, FakeMemoryd]]:
    root = short_temp_home("mcp-out-")
    fake = FakeMemoryd(root, mode=memoryd_mode)
    process = None
    try:
        process = Process(root)
        yield process, fake
    finally:
        if process is not None:
            process.stop()
        fake.close()
        shutil.rmtree(root, ignore_errors=True)


def _ended_alone(process: Process) -> str:
    """The log of a process that ended on its own within QUICK seconds, stdin still open."""
    took = process.ended_within(QUICK)
    assert took is not None, (
        f"memory-mcp still runs {QUICK} s after its answer could not be written"
    )
    log = process.stderr()
    assert "Traceback" not in log, log
    assert "the client closed stdout" in log, log
    return log


@pytest.mark.parametrize("name", list(UNWRITABLE))
def test_an_answer_that_cannot_be_written_ends_memory_mcp(name):
    with memory_mcp() as (process, fake):
        process.send(UNWRITABLE[name])
        log = _ended_alone(process)
        assert process.popen.returncode == 0
        assert "write" not in log.split("the client closed stdout", 1)[1], log
        assert fake.received == []


def test_the_answer_to_a_write_memoryd_made_cannot_be_written():
    with memory_mcp() as (process, fake):
        process.send(json.dumps(WRITE))
        _ended_alone(process)
        assert process.popen.returncode == 0
        assert [kind for kind, _ in fake.received] == ["memory_call"]


def test_a_write_with_memoryd_does_not_keep_memory_mcp_and_the_log_says_it():
    """memoryd holds the write (it answers nothing): the ping's answer, which cannot be written,
    ends memory-mcp long before memoryd's timeout, and the line says the write is memoryd's."""
    with memory_mcp("hang") as (process, fake):
        process.send(json.dumps(WRITE))
        deadline = time.monotonic() + QUICK
        while not fake.received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [kind for kind, _ in fake.received] == ["memory_call"]
        process.send(json.dumps(PING))
        log = _ended_alone(process)
        assert process.popen.returncode == 0
        [line] = [line for line in log.splitlines() if "the client closed stdout" in line]
        assert "1 memory write" in line and "bxctl memory log" in line, line


def test_a_stdout_closed_from_the_start_is_one_line(tmp_path):
    """With fd 1 closed, whatever memory-mcp opens next could land on it: it refuses to start."""
    command = [sys.executable, "-m", "memory_mcp", "--home", str(tmp_path)]
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *command],
        input=json.dumps(PING) + "\n",
        capture_output=True,
        text=True,
        timeout=QUICK * 4,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert done.returncode == 2
    assert done.stderr == "memory-mcp: stdout is closed: there is nowhere to answer an MCP client\n"
