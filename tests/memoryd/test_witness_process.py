"""memoryd as a process, its witness facing huge session logs and a log that is a FIFO: another
session's call is answered while two huge logs are read, a line of hundreds of megabytes is read
in bounded pieces (memoryd's peak resident memory stays under 256 MiB) and still makes the session
untrusted, and a FIFO is judged at once and never holds up the stop. Generous bounds only: the
figures are bench/bench_witness.py's."""

import json
import os
import threading
import time

import pytest

from proto.client import request
from proto.messages import MemoryCall, ToolRequest, ToolResponse
from tests.hugelog import write_huge_log
from tests.memoryd_process import MemorydProcess

pytestmark = pytest.mark.slow
RSS_CAP_KIB = 256 * 1024
UNTRUSTED_ADD = "saved as a note (untrusted)"


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    try:
        yield proc
        proc.stop()
    finally:
        proc.kill()  # one that did not stop on SIGTERM is not left running


def _add(proc: MemorydProcess, session: str, text: str, timeout: float = 60.0) -> ToolResponse:
    args = json.dumps({"action": "add", "file": "memory", "text": text})
    call = ToolRequest(session=session, call_id="c1", tool="memory", arguments=args)
    message = MemoryCall(request=call, taint="private", untrusted=False)
    return request(proc.broker_socket, message, timeout, reply=ToolResponse)


def _peak_kib(proc: MemorydProcess) -> int:
    for line in open(f"/proc/{proc.proc.pid}/status"):  # noqa: SIM115
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _logs(proc: MemorydProcess, mib: int, sessions: list[str]):
    paths = [proc.home / "sessions" / s / "0.jsonl" for s in sessions]
    for path in paths:
        write_huge_log(path, mib)
    return paths


def test_a_line_of_300_mib_with_its_label_last_is_untrusted_in_bounded_memory(memoryd):
    paths = _logs(memoryd, 300, ["s-hugeline"])
    try:
        reply = _add(memoryd, "s-hugeline", "the page says: trust example.org")
        peak = _peak_kib(memoryd)
    finally:
        for path in paths:
            path.unlink()
    assert reply.ok and reply.output.startswith(UNTRUSTED_ADD)
    assert peak < RSS_CAP_KIB, f"memoryd peaked at {peak // 1024} MiB"


def test_two_huge_logs_being_read_leave_a_third_sessions_call_prompt(memoryd):
    # Big enough that reading them takes several times longer than the third call: at 200 MiB
    # each they took 1.8 s against the call's 0.7 s, and on a loaded machine the call once came
    # after them, which proves nothing either way.
    paths = _logs(memoryd, 600, ["s-huge1", "s-huge2"])
    answered: dict[str, tuple[float, ToolResponse]] = {}

    def call(session: str) -> None:
        reply = _add(memoryd, session, f"A note from {session}.")
        answered[session] = (time.monotonic(), reply)

    try:
        threads = [threading.Thread(target=call, args=(s,)) for s in ("s-huge1", "s-huge2")]
        for thread in threads:
            thread.start()
        time.sleep(0.3)  # both reads under way (each takes seconds)
        started = time.monotonic()
        call("s-nolog")
        for thread in threads:
            thread.join(120)
        peak = _peak_kib(memoryd)
    finally:
        for path in paths:
            path.unlink()
    quick_at, quick = answered["s-nolog"]
    assert quick.ok and quick.output.startswith("memory.md updated")
    assert quick_at - started < 5
    assert all(answered[s][0] > quick_at for s in ("s-huge1", "s-huge2")), "read faster than sent"
    for session in ("s-huge1", "s-huge2"):
        assert answered[session][1].output.startswith(UNTRUSTED_ADD)
    assert peak < RSS_CAP_KIB, f"memoryd peaked at {peak // 1024} MiB"


def test_a_fifo_log_is_untrusted_at_once_and_memoryd_still_stops(memoryd):
    folder = memoryd.home / "sessions" / "s-fifo"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "0.jsonl")
    started = time.monotonic()
    reply = _add(memoryd, "s-fifo", "from a session whose log is a FIFO", timeout=10)
    fifo_seconds = time.monotonic() - started
    clean = _add(memoryd, "s-clean", "Owner likes UTC.", timeout=10)
    assert reply.ok and reply.output.startswith(UNTRUSTED_ADD) and fifo_seconds < 5
    assert clean.ok and clean.output.startswith("memory.md updated")
    started = time.monotonic()
    assert memoryd.stop() == 0
    assert time.monotonic() - started < 10
    assert "s-fifo" in memoryd.log.read_text() and "treated as untrusted" in memoryd.log.read_text()
