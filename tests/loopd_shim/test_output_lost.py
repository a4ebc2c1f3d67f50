"""The driver's output that cannot be written (stdout on a full disk, a pipe whose reader is
gone) is one line on stderr and exit 4, never a traceback, and never exit 1 (a call refused)
for a write that was applied: `start` names the session it started, `answer` each tool call and
whether it was done or refused."""

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent / "loopd-shim"
ADD = 'memory {"action": "add", "file": "memory", "text": "Written while stdout was full."}'


def driver(stack, *args, stdout):
    env = dict(os.environ, BOXMAKER_CONTROL_SOCKET=str(stack.config.control_socket))
    return subprocess.run(
        [str(BIN), *args], env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=30
    )


def one_line(ran) -> str:
    assert ran.returncode == 4, ran.stderr
    assert "Traceback" not in ran.stderr and len(ran.stderr.splitlines()) == 1, ran.stderr
    return ran.stderr


def test_start_on_a_full_disk_names_the_session_it_started(stack):
    with open("/dev/full", "w") as full:
        said = one_line(driver(stack, "start", stdout=full))
    [made] = [p.name for p in stack.config.sessions.iterdir()]
    assert said == (
        f"loopd-shim: session {made} was started, but its output could not be written: "
        "No space left on device\n"
    )


def test_answer_on_a_full_disk_says_the_write_was_done(stack):
    with open(os.devnull, "w") as null:
        assert driver(stack, "start", "--session", "s-full", stdout=null).returncode == 0
    with open("/dev/full", "w") as full:
        said = one_line(driver(stack, "answer", "s-full", "--call", ADD, stdout=full))
    [request] = stack.broker.requests
    assert request.tool == "memory" and json.loads(request.arguments)["action"] == "add"
    assert said == (
        f"loopd-shim: the answer was given and its tool calls answered (memory {request.call_id}"
        " done), but its output could not be written: No space left on device\n"
    )


def test_answer_to_a_reader_gone_is_one_line(stack):
    with open(os.devnull, "w") as null:
        assert driver(stack, "start", "--session", "s-pipe", stdout=null).returncode == 0
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w") as gone:
        said = one_line(driver(stack, "answer", "s-pipe", "--call", "nope {}", stdout=gone))
    assert said.startswith("loopd-shim: the answer was given and its tool calls answered (nope ")
    assert " refused), but its output could not be written: Broken pipe" in said
