"""Fixtures for brokerd-shim: a short temporary home with a config file, a fake memoryd on a real
Unix socket (it routes a memory add by the untrusted flag it receives, as memoryd does), and the
shim itself, all served from one uvloop event loop in a background thread, so tests talk to them
with proto's blocking client, as loopd-shim would.
"""

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvloop

from brokerd_shim.config import load_config
from brokerd_shim.server import Running, start
from proto.client import request
from proto.labels import Label
from proto.messages import MemoryCall, ToolRequest, ToolRequestMessage, ToolResponse
from proto.server import serve_unix

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_FIXTURES = REPO / "config" / "fixtures"
EXAMPLE_GRANTS = REPO / "config" / "grants"
NOTE_ANSWER = "saved as a note (untrusted): this session has read untrusted content"


class LoopThread:
    """One event loop running in a background thread; run() waits for a coroutine's result."""

    def __init__(self) -> None:
        self.loop = uvloop.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 20.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        async def cancel_the_rest():
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.run(cancel_the_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@dataclass
class FakeMemoryd:
    """memoryd's brokerd socket: records every memory_call, answers like memoryd would."""

    calls: list[MemoryCall] = field(default_factory=list)
    delay: float = 0.0
    label: Label | None = None
    answer: Callable[[MemoryCall], ToolResponse] | None = None

    async def handle(self, message: MemoryCall) -> ToolResponse:
        self.calls.append(message)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.answer is not None:
            return self.answer(message)
        request = message.request
        if request.tool == "memory" and '"add"' in request.arguments and message.untrusted:
            output = NOTE_ANSWER
        elif request.tool == "memory":
            output = (
                "memory.md updated (12 of 2,200 characters); it takes effect in the next session"
            )
        else:
            output = '(no matches for "launch")'
        return ToolResponse(call_id=request.call_id, ok=True, output=output, label=self.label)


@dataclass
class Stack:
    home: Path
    config_path: Path
    loop: LoopThread
    memoryd: FakeMemoryd
    running: Running | None = None
    memoryd_server: asyncio.AbstractServer | None = None

    @property
    def config(self):
        return load_config(self.config_path)

    @property
    def socket(self) -> Path:
        return self.config.broker_socket

    def start(self, runtime=None) -> Running:
        self.running = self.loop.run(start(self.config, runtime))
        return self.running

    def stop(self) -> None:
        if self.running is not None:
            self.loop.run(self.running.stop())
            self.running = None

    def restart(self) -> Running:
        self.stop()
        return self.start()

    def start_memoryd(self) -> None:
        async def serve():
            return await serve_unix(
                self.config.memory_socket, self.memoryd.handle, {"memory_call"}, name="fake-memoryd"
            )

        self.memoryd_server = self.loop.run(serve())

    def stop_memoryd(self) -> None:
        if self.memoryd_server is not None:

            async def close(server):
                server.close()
                await server.wait_closed()

            self.loop.run(close(self.memoryd_server))
            self.memoryd_server = None

    def call(self, tool: str, arguments: str, session: str = "mm-test1", call_id: str = "c1"):
        message = ToolRequestMessage(
            request=ToolRequest(session=session, call_id=call_id, tool=tool, arguments=arguments)
        )
        return request(self.socket, message, timeout=10)

    def audit_lines(self) -> list[str]:
        lines = []
        for path in sorted((self.home / "audit").glob("*.jsonl")):
            lines.extend(path.read_text().splitlines())
        return lines


def write_config(home: Path, extra: str = "", timeout: float = 2.0) -> Path:
    grants = home / "grants"
    grants.mkdir(mode=0o700, exist_ok=True)
    path = home / "brokerd.toml"
    path.write_text(
        f'[paths]\nhome = "{home}"\n\n[memory]\ntimeout_seconds = {timeout}\n\n'
        f'[fixtures]\ndir = "{EXAMPLE_FIXTURES}"\n{extra}'
    )
    return path


def add_grant(home: Path, name: str, text: str) -> Path:
    path = home / "grants" / name
    path.write_text(text)
    return path


@pytest.fixture
def home():
    # Unix socket paths are limited to 108 bytes: pytest's tmp_path can be too long.
    folder = Path(tempfile.mkdtemp(prefix="bs", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def loop_thread():
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture
def stack(home, loop_thread):
    """A fake memoryd and the shim, started; the example http_fetch grant installed."""
    config_path = write_config(home)
    shutil.copy(EXAMPLE_GRANTS / "http_fetch.toml", home / "grants" / "http_fetch.toml")
    s = Stack(home, config_path, loop_thread, FakeMemoryd())
    s.start_memoryd()
    s.start()
    yield s
    s.stop()
    s.stop_memoryd()
