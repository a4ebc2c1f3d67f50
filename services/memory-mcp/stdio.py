"""Serve one MCP connection on stdin and stdout until the client closes stdin.

The SDK's stdio_server owns stdout (it points fd 1 at stderr while serving, so nothing stray
reaches the wire); stdin is read through BoundedLines, which answers an oversized message, and
each line is screened (screen.py) before the SDK sees it, so that a line the SDK would drop
without a word (not JSON, an invalid request, a batch) gets its JSON-RPC error. Both answers go out
on the same write stream the SDK uses.
"""

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memory_mcp.screen import Refusal, screen
from memory_mcp.server import MemoryMcp
from memory_mcp.stdin_lines import BoundedLines, oversized_text

log = logging.getLogger("memory_mcp.stdio")

# A line longer than this is screened on a worker thread, so that parsing it never holds up the
# answers to the requests in flight.
SCREEN_INLINE = 65_536


async def screened(
    lines: AsyncIterator[str], refuse: Callable[[Refusal], Awaitable[None]]
) -> AsyncIterator[str]:
    """The lines the SDK can take; every other line is answered with refuse, blank ones skipped."""
    async for line in lines:
        if not line.strip():
            continue
        if len(line) > SCREEN_INLINE:
            refusal = await anyio.to_thread.run_sync(screen, line)
        else:
            refusal = screen(line)
        if refusal is None:
            yield line
            continue
        log.warning(
            "stdin: a line of %d characters answered with error %d (id %r)",
            len(line),
            refusal.code,
            refusal.ident,
        )
        await refuse(refusal)


async def serve(handlers: MemoryMcp, version: str, stdin_fd: int = 0) -> None:
    server = handlers.server(version)
    ready = anyio.Event()
    streams: dict = {}

    async def answer(ident: int | str | None, code: int, message: str) -> None:
        await ready.wait()
        error = types.JSONRPCError(
            jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message)
        )
        await streams["write"].send(SessionMessage(error))

    async def oversized(ident: int | str | None, size: int) -> None:
        await answer(ident, types.INVALID_REQUEST, oversized_text(size))

    async def refuse(refusal: Refusal) -> None:
        await answer(refusal.ident, refusal.code, refusal.message)

    # stdio_server only iterates its stdin's lines, which these give (with a size cap, screened);
    # the SDK's annotation names anyio's AsyncFile, which they are not.
    lines = screened(BoundedLines(stdin_fd, oversized), refuse)
    async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        streams["write"] = write
        ready.set()
        log.info("serving MCP on stdio (pid %d)", os.getpid())
        await server.run(read, write, server.create_initialization_options())
    log.info("session %s: the client closed the connection", handlers.session or "(none)")
