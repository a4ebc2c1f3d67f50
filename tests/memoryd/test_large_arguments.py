"""memoryd as a process against peers that send memory calls with arguments far longer than any
valid call: each is refused in one line before its JSON is parsed, so the loopd socket's memory
block (a session's start) is still answered promptly meanwhile. Bounds are generous."""

import json
import threading
import time

from proto.client import request
from proto.messages import MemoryBlock, MemoryCall, ToolRequest
from tests.memoryd_process import MemorydProcess

# A consolidate of 60,000 entries: about 840 KB of arguments, within one frame.
HUGE = json.dumps({"action": "consolidate", "file": "memory", "entries": [{"old": "x"}] * 60_000})


def memory_call(arguments: str) -> MemoryCall:
    req = ToolRequest(session="s-h", call_id="h", tool="memory", arguments=arguments)
    return MemoryCall(request=req, taint="public", untrusted=False)


def test_arguments_longer_than_any_call_are_refused_and_the_block_still_answers(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    try:
        answer = request(proc.broker_socket, memory_call(HUGE), 30.0)
        assert not answer.ok and "\n" not in answer.output
        assert (
            f"memory: arguments of {len(HUGE):,} characters are over the limit of 131,072"
            in answer.output
        )
        stop = threading.Event()

        def hammer() -> None:
            while not stop.is_set():
                try:
                    request(proc.broker_socket, memory_call(HUGE), 60.0)
                except Exception:  # a refused or busy socket: the next try goes on
                    time.sleep(0.01)

        threads = [threading.Thread(target=hammer, daemon=True) for _ in range(24)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(1.0)
            worst = 0.0
            for _ in range(10):
                began = time.monotonic()
                assert isinstance(request(proc.loop_socket, MemoryBlock(), 30.0).text, str)
                worst = max(worst, time.monotonic() - began)
                time.sleep(0.1)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=70)
        # loopd-shim waits 10 s for the block; unbounded parsing took several times that.
        assert worst < 5.0, f"memory_block took {worst:.1f} s while peers sent huge calls"
    finally:
        proc.stop()
