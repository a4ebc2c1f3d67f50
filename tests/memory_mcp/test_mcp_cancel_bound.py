"""How much a client can have memory-mcp hold: a call the client cancels is still seen through with
memoryd (a write memoryd got is applied), so it keeps its place in the bound until memoryd ends it,
and a call past the bound is answered at once, never sent; requests waiting for a stalled read of
the block are waited for as requests being worked on, never let go so that more are read; and a
read that waited for the start's own read gets its failure, within --timeout, not twice it."""

import fcntl
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from mcp_types.version import LATEST_HANDSHAKE_VERSION

from memory_mcp.link import MOST_CALLS, busy_text
from tests.integration.stack import short_temp_home
from tests.memory_mcp.fake_memoryd import FakeMemoryd

READ = {"uri": "memory://block"}


def _memory(root: Path) -> Path:
    """A home whose block can be built (so a call goes to memoryd as soon as it is read)."""
    memory = root / "memory"
    memory.mkdir(mode=0o700)
    for name in ("soul.md", "memory.md", "user.md"):
        (memory / name).write_text("")
    return memory


class Raw:
    """memory-mcp driven over stdio as JSON-RPC lines, its answers gathered by id."""

    def __init__(self, home: Path, *args: str) -> None:
        self.log = home / "memory-mcp.log"
        with open(self.log, "wb") as errlog:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memory_mcp", "--home", str(home), *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
                env={**os.environ, "BOXMAKER_MCP_STATE": str(home / "state")},
            )
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        init = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
        init["clientInfo"] = {"name": "flood", "version": "1"}
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        assert "result" in self.wait_for("init", 20)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.replies.put(json.loads(raw))

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def wait_for(self, ident, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            reply = self.replies.get(timeout=max(0.01, deadline - time.monotonic()))
            if reply.get("id") == ident:
                return reply

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def _recall(ident: int, query: str) -> dict:
    params = {"name": "recall", "arguments": {"query": query}}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def test_cancelled_calls_keep_their_place_with_memoryd_and_past_it_calls_are_refused():
    root = short_temp_home("mcp-cancel-")
    _memory(root)
    fake = FakeMemoryd(root, mode="hang")  # memoryd slower than --timeout: nothing answered
    client = Raw(root, "--timeout", "30")
    try:
        for ident in range(1, 301):
            client.send(_recall(ident, f"x{ident}"))
            cancel = {"requestId": ident, "reason": "the user moved on"}
            client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        client.send(_recall(1000, "not cancelled"))
        started = time.monotonic()
        refused = client.wait_for(1000, 10)
        waited = time.monotonic() - started
        with_memoryd = len(fake.received)
    finally:
        client.close()
        fake.close()
        shutil.rmtree(root, ignore_errors=True)
    assert with_memoryd == MOST_CALLS
    assert waited < 5, waited  # at once, not at the end of a call with memoryd
    result = refused["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == busy_text(30.0)


def test_requests_waiting_for_a_stalled_block_read_are_not_let_go():
    root = short_temp_home("mcp-stall-")
    memory = _memory(root)
    gate = os.open(memory, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(gate, fcntl.LOCK_EX)  # memoryd changing the files on a stalled disk
    client = Raw(root, "--timeout", "3")
    try:
        started = time.monotonic()
        client.send({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": READ})
        for ident in range(2, 151):  # sent without waiting, answers not read meanwhile
            client.send({"jsonrpc": "2.0", "id": ident, "method": "resources/read", "params": READ})
        first = client.wait_for(1, 10)
        waited = time.monotonic() - started
        time.sleep(1.5)
        log = client.log.read_text()
    finally:
        client.close()
        os.close(gate)
        shutil.rmtree(root, ignore_errors=True)
    assert "the memory block cannot be built" in json.dumps(first)
    assert waited < 4.5, waited  # one --timeout, not the start's read and then its own
    assert "never answered are let go" not in log, log
