"""stdout as the SDK writes MCP messages on it, and the end of memory-mcp once the client is gone.

A client that closed its end of the pipe (it stopped reading, or its reader went away) but keeps
stdin open would keep memory-mcp for as long as it lives: the failed write ends the SDK's session,
but the thread reading stdin cannot be stopped, and the interpreter waits for it at exit. So the
first write that fails because nobody reads (EPIPE, or ECONNRESET when stdout is a socket) logs one
line and ends the process at once. It does not wait for a call memoryd is working on either: the
answer could not be delivered, and memoryd finishes what it read, so a write it got is applied all
the same; the line says how many writes were still with memoryd.

Any other failure to write (a full disk, EIO from a terminal that hung up) ends memory-mcp the
same way, with one line naming the error and exit status 1: no answer can reach the client, and a
traceback would only fill its log.

memory-mcp claims fd 1 itself, as the SDK's stdio_server would, so that it sees the write fail:
the messages go out on a private copy of fd 1, and fd 1 points at stderr meanwhile, so nothing
stray reaches the wire.
"""

import errno
import fcntl
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

import anyio.to_thread

log = logging.getLogger("memory_mcp.stdout")

NOBODY_READS = (errno.EPIPE, errno.ECONNRESET)


def closed_text(writes: int) -> str:
    if not writes:
        return "the client closed stdout: the connection is over"
    return (
        f"the client closed stdout with {writes} memory write(s) not answered by memoryd yet: "
        "memoryd applies a write it got all the same (the owner can check with "
        "`bxctl memory log`); the connection is over"
    )


def client_gone(writes: int) -> NoReturn:
    """One log line, then the process ends without waiting for the thread blocked on stdin."""
    if writes:
        log.warning(closed_text(writes))
    else:
        log.info(closed_text(writes))
    logging.shutdown()
    os._exit(0)


def failed_text(reason: str, writes: int) -> str:
    pending = (
        f", with {writes} memory write(s) not answered by memoryd yet (memoryd applies a write it "
        "got all the same; the owner can check with `bxctl memory log`)"
        if writes
        else ""
    )
    return (
        f"cannot write to stdout ({reason}): no answer can reach the client, so the connection "
        f"is over{pending}; check where the client points memory-mcp's stdout"
    )


def cannot_write(e: OSError, writes: int) -> NoReturn:
    """One log line naming the error, then exit status 1, as for a client gone (client_gone)."""
    log.error(failed_text(e.strerror or str(e), writes))
    logging.shutdown()
    os._exit(1)


@contextmanager
def claimed(fd: int = 1) -> Iterator[int]:
    """A private copy of fd for the wire; fd itself points at stderr until the block ends."""
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(2, fd)
    try:
        yield wire
    finally:
        os.dup2(wire, fd)
        os.close(wire)


class Wire:
    """The stdout of the SDK's stdio_server(stdout=...): each message is written whole on flush."""

    def __init__(self, fd: int, writes: Callable[[], int]) -> None:
        self.fd = fd
        self.writes = writes  # memory writes memoryd has not answered yet
        self._pending: list[str] = []
        self.flushing = 0  # writes under way: a client that does not read holds them here

    async def write(self, text: str) -> None:
        self._pending.append(text)

    async def flush(self) -> None:
        data = "".join(self._pending).encode("utf-8")
        self._pending.clear()
        self.flushing += 1
        try:
            await anyio.to_thread.run_sync(_write_all, self.fd, data)
        except OSError as e:
            if e.errno not in NOBODY_READS:
                cannot_write(e, self.writes())
            client_gone(self.writes())
        finally:
            self.flushing -= 1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
