"""The end of stdin waits the whole bound (memoryd's timeout and a margin) only for a call to
memoryd in progress: a request the SDK takes and never answers is waited for about a second, so a
client that sent one and went away does not keep memory-mcp for timeout+5 s.

The SDK never answers, among others, a line with an id, a method that is not a string and a result
or an error: it validates as a response (the method is ignored), which answers nothing, though the
line reads as a request. Nor a request the client cancelled with its id spelled as a string
("7" for 7): the SDK takes the two for one id.
"""

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
from tests.memory_mcp import fake_memoryd
from tests.memory_mcp.fake_memoryd import FakeMemoryd

TIMEOUT = 30.0  # memory-mcp's --timeout: the whole bound would be 35 s
QUICK = 5.0  # well under the bound, well over the second an unanswerable request gets
MEMORYD_TAKES = 3.0  # how long the slow memoryd takes over a call (longer than that second)

ADD = {"action": "add", "file": "user", "text": "Prefers answers in UTC."}
# lines the SDK takes and never answers: name -> line
NEVER_ANSWERED = {
    "a method that is a number, with a result": {
        "jsonrpc": "2.0",
        "id": 5,
        "method": 5,
        "result": {},
    },
    "a method that is a list, with an error": {
        "jsonrpc": "2.0",
        "id": "e",
        "method": ["ping"],
        "error": {"code": 1, "message": "no"},
    },
}


class Process:
    """memory-mcp on a home, initialised, with a long --timeout."""

    def __init__(self, home: Path) -> None:
        self.errlog = open(home / "memory-mcp.log", "wb")  # noqa: SIM115 (closed in stop)
        self.popen = subprocess.Popen(
            [
                *(sys.executable, "-m", "memory_mcp", "--home", str(home)),
                *("--trust", "trusted", "--timeout", str(TIMEOUT)),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errlog,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": LATEST_HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "stdin end", "version": "1"},
                },
            }
        )
        assert self.popen.stdout is not None
        assert json.loads(self.popen.stdout.readline())["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write((json.dumps(message) + "\n").encode())
        self.popen.stdin.flush()

    def close_stdin(self, wait: float) -> tuple[list[dict], float]:
        """Close stdin; the messages written after it and how long the process took to end
        (wait and more when it did not end within wait, after which it is killed)."""
        assert self.popen.stdin is not None and self.popen.stdout is not None
        started = time.monotonic()
        try:
            out, _ = self.popen.communicate(timeout=wait)  # closes stdin first
        except subprocess.TimeoutExpired:
            self.popen.kill()
            out, _ = self.popen.communicate()
        took = time.monotonic() - started
        return [json.loads(line) for line in out.splitlines()], took

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                stream.close()
        self.errlog.close()


@contextmanager
def memory_mcp(memoryd_mode: str | None = None) -> Iterator[Process]:
    """memory-mcp, with a fake memoryd in memoryd_mode or none listening."""
    root = short_temp_home("mcp-end-")
    fake = FakeMemoryd(root, mode=memoryd_mode) if memoryd_mode is not None else None
    process = None
    try:
        process = Process(root)
        yield process
    finally:
        if process is not None:
            process.stop()
        if fake is not None:
            fake.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("name", list(NEVER_ANSWERED))
def test_a_request_the_sdk_never_answers_does_not_hold_the_end_of_stdin(name):
    with memory_mcp() as process:
        process.send(NEVER_ANSWERED[name])
        process.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        assert process.popen.stdout is not None
        # the SDK has read the line by the time it answers the ping after it
        assert json.loads(process.popen.stdout.readline()) == {
            "jsonrpc": "2.0",
            "id": "p",
            "result": {},
        }
        out, took = process.close_stdin(QUICK * 2)
        assert out == []
        assert took < QUICK, f"memory-mcp ended {took:.1f} s after stdin closed"
        assert process.popen.returncode == 0


@pytest.fixture
def slow_memoryd(monkeypatch):
    """The fake memoryd (in this process) answers MEMORYD_TAKES seconds late."""
    monkeypatch.setattr(fake_memoryd, "SLOW", MEMORYD_TAKES)


def _write(ident: int | str) -> dict:
    params = {"name": "memory", "arguments": ADD}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def test_a_write_in_progress_is_answered_though_a_request_was_never_answered(slow_memoryd):
    """The second the unanswered request gets does not cut short a call memoryd works on."""
    with memory_mcp("slow") as process:
        process.send(NEVER_ANSWERED["a method that is a number, with a result"])
        process.send(_write(1))
        time.sleep(0.3)  # the call has reached memoryd
        out, took = process.close_stdin(TIMEOUT)
        assert [answer["id"] for answer in out] == [1], out
        assert "error" not in out[0], out
        assert out[0]["result"]["content"][0]["text"] == "fake answer"
        assert not out[0]["result"]["isError"]
        assert MEMORYD_TAKES * 0.8 <= took < MEMORYD_TAKES + QUICK
        assert process.popen.returncode == 0


def test_a_write_cancelled_by_its_id_as_a_string_is_not_waited_for_the_whole_bound(slow_memoryd):
    """The SDK drops the answer of a request cancelled as "7" for 7: once memoryd has answered,
    nothing more is owed."""
    with memory_mcp("slow") as process:
        process.send(_write(7))
        time.sleep(0.3)  # the call has reached memoryd
        cancel = {"requestId": "7", "reason": "the user stopped it"}
        process.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        out, took = process.close_stdin(TIMEOUT)
        assert out == []
        assert took < MEMORYD_TAKES + QUICK, f"memory-mcp ended {took:.1f} s after stdin closed"
        assert process.popen.returncode == 0
