"""A memory call whose caller stopped waiting before memoryd began it is not applied: brokerd gave
up at its limit and told the model the call failed (memoryd was stopped, or the machine swapped,
with the frame in its socket's buffer)."""

import os
import signal
import socket
import time

import pytest

from proto.client import request
from proto.frames import encode_frame
from proto.messages import MemoryCall, ToolRequest, body_of
from tests.memoryd.store_helpers import args
from tests.memoryd_process import MemorydProcess


def _call(text: str, call_id: str) -> MemoryCall:
    req = ToolRequest(
        session="mm-1",
        call_id=call_id,
        tool="memory",
        arguments=args(action="add", file="memory", text=text),
    )
    return MemoryCall(request=req, taint="private", untrusted=False)


@pytest.fixture
def memoryd(tmp_path):
    process = MemorydProcess(tmp_path).start()
    yield process
    os.kill(process.proc.pid, signal.SIGCONT)
    process.stop()


def test_a_call_given_up_while_memoryd_was_stopped_is_not_applied(memoryd):
    os.kill(memoryd.proc.pid, signal.SIGSTOP)
    given_up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    given_up.connect(str(memoryd.broker_socket))  # the kernel queues it while memoryd is stopped
    given_up.sendall(encode_frame("memory_call", body_of(_call("Given up on.", "c1"))))
    given_up.close()  # brokerd's limit passed: it told the model the call failed
    os.kill(memoryd.proc.pid, signal.SIGCONT)

    # a call whose caller still waits is applied as ever, after the one given up
    reply = request(memoryd.broker_socket, _call("Waited for.", "c2"))
    assert reply.ok, reply.output
    deadline = time.monotonic() + 10
    while "c1 not applied" not in memoryd.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    memory = (memoryd.home / "memory" / "memory.md").read_text()
    assert "Waited for." in memory and "Given up on." not in memory
    assert "its caller stopped waiting" in memoryd.log.read_text()


def test_a_caller_that_only_shut_down_its_sending_side_is_answered(memoryd):
    """A one-request client may shut down its sending side once the request is out: it still
    waits for the answer, and its write is applied."""
    waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        waiting.connect(str(memoryd.broker_socket))
        waiting.sendall(encode_frame("memory_call", body_of(_call("Half closed.", "c3"))))
        waiting.shutdown(socket.SHUT_WR)
        waiting.settimeout(10)
        answer = b""
        while chunk := waiting.recv(65536):
            answer += chunk
    finally:
        waiting.close()
    assert b"memory.md updated" in answer  # the tool_response, in its frame
    assert "Half closed." in (memoryd.home / "memory" / "memory.md").read_text()
