"""memoryd as a real process on a short temporary home, and memory-mcp started by the MCP SDK's
own stdio client, as an MCP client would start it."""

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.integration.stack import short_temp_home
from tests.memoryd_process import MemorydProcess

CLIENT_TIMEOUT = 20.0


class McpHome:
    """A temporary home with memoryd on it, and a way to connect memory-mcp to it."""

    def __init__(self, root: Path):
        self.root = root
        self.memoryd = MemorydProcess(root)
        self.home = self.memoryd.home
        self.stderr = root / "memory-mcp.log"
        self.state = root / "mcp-state"  # the clients' kept states (raised.py)

    @asynccontextmanager
    async def connect(
        self, *args: str, mode: str = "auto", name: str = "test client"
    ) -> AsyncIterator[Client]:
        """memory-mcp --home {home} *args, driven by the SDK's Client over stdio."""
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "memory_mcp", "--home", str(self.home), *args],
            env={
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                "BOXMAKER_MCP_STATE": str(self.state),
            },
        )
        with open(self.stderr, "a") as errlog:
            transport = stdio_client(params, errlog=errlog)
            async with Client(
                transport,
                client_info=types.Implementation(name=name, version="1.0"),
                mode=mode,
                read_timeout_seconds=CLIENT_TIMEOUT,
            ) as client:
                yield client

    def memory_file(self, name: str) -> str:
        return (self.home / "memory" / name).read_text()

    def write_memory(self, memory: str = "", user: str = "", soul: str = "A test soul.\n") -> None:
        """The three files of the block, as memoryd would have created them (folder 0700)."""
        folder = self.home / "memory"
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
        for name, text in (("soul.md", soul), ("memory.md", memory), ("user.md", user)):
            (folder / name).write_text(text)

    def expected_block(self) -> str:
        """The block as memoryd's own code renders these files."""
        from memoryd.home import Home
        from memoryd.memory.block import build

        return build(Home(self.home))


@pytest.fixture
def mcp_home():
    root = short_temp_home("mcp-")
    home = McpHome(root)
    home.memoryd.start()
    try:
        yield home
    finally:
        home.memoryd.kill()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def down_home():
    """A home whose memoryd was never started: nothing listens on its sockets."""
    root = short_temp_home("mcp-")
    try:
        yield McpHome(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
