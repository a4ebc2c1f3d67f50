"""Serve one MCP connection on stdin and stdout until the client closes stdin.

The SDK's stdio_server owns stdout (it points fd 1 at stderr while serving, so nothing stray
reaches the wire); stdin is read through BoundedLines, which answers an oversized message with the
SDK's JSON-RPC error on the same write stream the SDK uses.
"""

import logging
import os

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memory_mcp.server import MemoryMcp
from memory_mcp.stdin_lines import BoundedLines, oversized_text

log = logging.getLogger("memory_mcp.stdio")


async def serve(handlers: MemoryMcp, version: str, stdin_fd: int = 0) -> None:
    server = handlers.server(version)
    ready = anyio.Event()
    streams: dict = {}

    async def oversized(ident: int | str | None, size: int) -> None:
        await ready.wait()
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=ident,
            error=types.ErrorData(code=types.INVALID_REQUEST, message=oversized_text(size)),
        )
        await streams["write"].send(SessionMessage(error))

    # stdio_server only iterates its stdin's lines, which BoundedLines gives (with a size cap);
    # the SDK's annotation names anyio's AsyncFile, which it is not.
    lines = BoundedLines(stdin_fd, oversized)
    async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        streams["write"] = write
        ready.set()
        log.info("serving MCP on stdio (pid %d)", os.getpid())
        await server.run(read, write, server.create_initialization_options())
    log.info("session %s: the client closed the connection", handlers.session or "(none)")
