"""Serve one MCP connection on stdin and stdout until the client closes stdin.

stdout is claimed as the SDK's stdio_server would claim it (fd 1 points at stderr while serving, so
nothing stray reaches the wire), by stdout_wire.py, which ends memory-mcp once the client no longer
reads it; stdin is read through BoundedLines, which answers an oversized message, and
each line is screened (screen.py) before the SDK sees it, so that a line the SDK would drop
without a word (not JSON, an invalid request, a batch) gets its JSON-RPC error. Both answers go out
on the same write stream the SDK uses.

The end of stdin is passed on to the SDK only once every request let through has been answered
(inflight.py): the SDK would otherwise cancel them and answer "Connection closed", though a write
already sent to memoryd is applied.
"""

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memory_mcp import logqueue
from memory_mcp.inflight import AnswerWatch, InFlight
from memory_mcp.screen import Refusal, screen_message
from memory_mcp.server import MemoryMcp
from memory_mcp.stdin_lines import NOT_TEXT, BoundedLines, oversized_text
from memory_mcp.stdout_wire import Wire, claimed

log = logging.getLogger("memory_mcp.stdio")

# A line longer than this is screened on a worker thread, so that parsing it never holds up the
# answers to the requests in flight.
SCREEN_INLINE = 65_536
# How much longer than memoryd's timeout the end of stdin waits for the answers still owed.
SETTLE_MARGIN = 5.0


async def screened(
    lines: AsyncIterator[str],
    refuse: Callable[[Refusal], Awaitable[None]],
    in_flight: InFlight,
    settle: float,
    busy: Callable[[], bool] = lambda: False,
    writing: Callable[[], bool] = lambda: False,
) -> AsyncIterator[str]:
    """The lines the SDK can take; every other line is answered with refuse, blank ones skipped.
    No more lines are read while inflight.MOST requests are unanswered (a client that does not
    read its answers). At the end of lines, the requests still owed an answer are waited for (at
    most settle s)."""
    async for line in lines:
        if not line.strip():
            continue
        if len(line) > SCREEN_INLINE:
            found = await anyio.to_thread.run_sync(screen_message, line)
        else:
            found = screen_message(line)
        if not isinstance(found, Refusal):
            in_flight.read(found)
            yield line
            await in_flight.room(lambda: not busy() and not writing())
            continue
        refusal = found
        log.warning(
            "stdin: a line of %d characters answered with error %d (id %r)",
            len(line),
            refusal.code,
            refusal.ident,
        )
        await refuse(refusal)
    if len(in_flight):
        log.info("stdin closed: waiting for %d answers still owed", len(in_flight))
        if not await in_flight.settled(settle, busy):
            log.warning("stdin closed: %d requests left unanswered", len(in_flight))


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

    async def not_text(ident: int | str | None) -> None:
        await answer(ident, types.PARSE_ERROR, NOT_TEXT)

    async def refuse(refusal: Refusal) -> None:
        await answer(refusal.ident, refusal.code, refusal.message)

    # stdio_server only iterates its stdin's lines, which these give (with a size cap, screened),
    # and only writes and flushes its stdout; the SDK's annotations name anyio's AsyncFile, which
    # neither is.
    in_flight = InFlight()
    settle = handlers.memoryd.timeout + SETTLE_MARGIN
    wires: list[Wire] = []
    lines = screened(
        BoundedLines(stdin_fd, oversized, not_text),
        refuse,
        in_flight,
        settle,
        lambda: (
            handlers.memoryd.calls + handlers.block_files.waiting + handlers.keeper.waiting > 0
            or (handlers.recall_check is not None and handlers.recall_check.waiting > 0)
        ),
        lambda: any(w.flushing for w in wires),
    )
    with claimed(1) as wire:
        stdout = Wire(wire, lambda: handlers.memoryd.writes)
        wires.append(stdout)
        async with stdio_server(stdin=lines, stdout=stdout) as (read, write):  # type: ignore[arg-type]
            streams["write"] = write
            ready.set()
            log.info("serving MCP on stdio (pid %d)", os.getpid())
            watched = AnswerWatch(write, in_flight)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(handlers.open_block)
                await server.run(read, watched, server.create_initialization_options())
                tasks.cancel_scope.cancel()  # a read still stalled is not waited for
    log.info(
        "session %s: the client closed the connection",
        handlers.session or "(none)",
        extra={logqueue.LAST: True},
    )
