"""What a client can make memory-mcp hold or spend with the lines it sends: a cancel after every
request does not lift the bound on how far reading runs ahead of the answers a client leaves
unread, and a line built to make the search for its id start again at every quote is looked at
once, so the requests after it are still answered."""

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from memory_mcp import inflight
from memory_mcp.inflight import AnswerWatch, InFlight
from memory_mcp.screen import top_level_id
from memory_mcp.stdio import screened
from tests.integration.stack import short_temp_home

CANCELLED = "notifications/cancelled"


def _pings_each_cancelled(n: int):
    async def lines():
        for i in range(n):
            yield json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) + "\n"
            cancel = {"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": i}}
            yield json.dumps(cancel) + "\n"

    return lines()


async def _refuse(refusal) -> None:
    raise AssertionError(f"refused {refusal}")


def _pong(ident: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=ident, result={}))


def test_answers_to_cancelled_requests_waiting_to_go_out_stop_the_reading(monkeypatch):
    """The SDK answers a ping at once; the cancel that follows comes too late to stop the answer,
    which waits for a client that does not read."""
    monkeypatch.setattr(inflight, "MOST", 8)
    in_flight = InFlight()
    pings: list[int] = []

    async def run():
        wire, taken = anyio.create_memory_object_stream(0)  # nobody takes: stdout not read
        watch = AnswerWatch(wire, in_flight)
        lines = screened(_pings_each_cancelled(200), _refuse, in_flight, 1.0, writing=lambda: True)
        finished = anyio.Event()

        async with anyio.create_task_group() as tasks:

            async def read():
                async for line in lines:
                    message = json.loads(line)
                    if "id" in message:
                        pings.append(message["id"])
                        tasks.start_soon(watch.send, _pong(message["id"]))
                    await anyio.sleep(0)  # handing the line to the SDK lets its tasks run
                finished.set()

            async def client_reads():
                async for _ in taken:
                    pass

            tasks.start_soon(read)
            await anyio.sleep(1.5)  # longer than GRACE: a blocked answer is never let go
            stalled = len(pings)
            tasks.start_soon(client_reads)  # every answer goes out, and reading goes on
            with anyio.fail_after(30):
                await finished.wait()
            tasks.cancel_scope.cancel()
        return stalled

    stalled = anyio.run(run)
    assert stalled < 2 * 8, stalled
    assert len(pings) == 200
    assert len(in_flight) == 0


def test_a_cancel_that_stops_the_answer_frees_its_place_at_once(monkeypatch):
    """A cancel that came while the handler ran leaves no answer to wait for: nothing is held."""
    monkeypatch.setattr(inflight, "MOST", 8)
    in_flight = InFlight()

    async def run():
        lines = screened(_pings_each_cancelled(50), _refuse, in_flight, 1.0, writing=lambda: True)
        return [line async for line in lines]

    assert len(anyio.run(run)) == 100
    assert in_flight.held() == 0


# --- memory-mcp as a process ----------------------------------------------------------------


class Unread:
    """memory-mcp over pipes, initialized, whose stdout the client then never reads."""

    def __init__(self, root: Path) -> None:
        home = root / "home"
        (home / "memory").mkdir(parents=True, mode=0o700)
        self.log = root / "memory-mcp.log"
        with open(self.log, "wb") as errlog:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memory_mcp", "--home", str(home)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
                env={**os.environ, "BOXMAKER_MCP_STATE": str(root / "state")},
            )
        init = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
        init["clientInfo"] = {"name": "bounds", "version": "1"}
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        assert self.reply(20)["id"] == "init"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict | bytes) -> None:
        assert self.process.stdin is not None
        data = message if isinstance(message, bytes) else (json.dumps(message) + "\n").encode()
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def reply(self, timeout: float) -> dict:
        """The next line on stdout (os.read: nothing is kept in a Python buffer)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        data = b""
        deadline = time.monotonic() + timeout
        while not data.endswith(b"\n"):
            os.set_blocking(fd, False)
            try:
                chunk = os.read(fd, 1)
            except BlockingIOError:
                assert time.monotonic() < deadline, f"no answer in {timeout} s"
                time.sleep(0.01)
                continue
            assert chunk, "memory-mcp closed stdout"
            data += chunk
        return json.loads(data)

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def _flood(client: Unread, most: int, quiet: float) -> int:
    """ping + cancel pairs, stdout never read, until memory-mcp takes no more for quiet seconds
    or most pairs are taken; how many it took."""
    assert client.process.stdin is not None
    fd = client.process.stdin.fileno()
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    pairs, pending, taken_at = 0, b"", time.monotonic()
    while pairs < most and time.monotonic() - taken_at < quiet:
        if not pending:
            pairs += 1
            ping = {"jsonrpc": "2.0", "id": pairs, "method": "ping"}
            cancel = {"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": pairs}}
            pending = (json.dumps(ping) + "\n" + json.dumps(cancel) + "\n").encode()
        try:
            pending = pending[os.write(fd, pending) :]
            taken_at = time.monotonic()
        except BlockingIOError:
            time.sleep(0.05)
    return pairs


def test_a_client_that_cancels_everything_and_reads_nothing_is_stopped_being_read():
    """The pipes hold a few thousand such pairs (stdout's answers, stdin's lines, one chunk read
    ahead); past them and the 64 answers held, memory-mcp reads no more."""
    root = short_temp_home("mcp-flood-")
    client = Unread(root)
    try:
        taken = _flood(client, most=12_000, quiet=5.0)
        alive = client.process.poll() is None
    finally:
        client.close()
        shutil.rmtree(root, ignore_errors=True)
    assert alive
    assert taken < 10_000, taken


def _quoted_past_the_parser(size: int) -> bytes:
    """Nested past Python's recursion limit, then a string of escaped quotes that never ends."""
    head = b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * 3000 + b'"'
    return head + b'\\"' * ((size - len(head)) // 2) + b"\n"


def test_a_line_that_restarts_a_token_search_at_every_quote_is_answered_and_so_is_the_next():
    root = short_temp_home("mcp-deep-")
    client = Unread(root)
    try:
        client.send(_quoted_past_the_parser(400_000))
        client.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        refused = client.reply(60)  # seconds here; hours when each quote starts a search again
        pong = client.reply(60)
    finally:
        client.close()
        shutil.rmtree(root, ignore_errors=True)
    assert refused["id"] is None  # the string that never ends hides any id after it
    assert refused["error"]["code"] == types.INVALID_REQUEST
    assert pong == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_the_id_search_of_a_line_of_a_megabyte_ends():
    """Run apart, so that the search of the old kind is stopped (killed) rather than waited for."""
    line = _quoted_past_the_parser(1_000_000).decode()
    script = "import sys; from memory_mcp.screen import top_level_id; "
    script += "print(repr(top_level_id(sys.stdin.read())))"
    done = subprocess.run(
        [sys.executable, "-c", script], input=line, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "None", done.stderr


@pytest.mark.parametrize(
    ("text", "ident"),
    [
        ('{"id": 7, "params": ["' + '\\"' * 1000, 7),  # found before the string that never ends
        ('{"params": ["' + '\\"' * 1000 + '"], "id": 7}', 7),
        ('{"params": "' + '\\"' * 1000 + ', "id": 7}', None),  # after it: never found
        ('{"params": ["]]]}}}", "[[[{{{"], "id": 9}', 9),  # brackets in strings are text
        ('{"params": [[{"id": 1}]], "id": "x"}', "x"),
        ('{"a\\"id": 1, "id": 2}', 2),
        ('{"params": ' + "[" * 4000 + "]" * 4000 + ', "id": 3}', 3),
        ('{"id": "ab\\', None),
        ('{"id"   :   12}', 12),
        ('{"\\x": 1, "id": 2}', None),  # not JSON's escape: the name cannot be read
    ],
)
def test_the_id_of_a_line_scanned_once(text, ident):
    assert top_level_id(text) == ident
