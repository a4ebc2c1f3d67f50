"""stdin as MCP messages, one a line, with a bound on a line's length.

The SDK's stdio transport reads a whole line before it looks at it, however long. This reader,
handed to the SDK's stdio_server in its place, never holds more than MAX_MESSAGE bytes of a line:
a longer one is skipped to its newline, and answered with the SDK's own JSON-RPC error (invalid
request) carrying the request's id, found in the first bytes of the line, so the client's pending
call ends at once instead of waiting. When no id can be found there, the error goes out with id
null, as JSON-RPC asks.
"""

import json
import logging
import os
from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread

from memory_mcp.screen import valid_id
from proto.frames import MAX_FRAME

log = logging.getLogger("memory_mcp.stdin")

MAX_MESSAGE = MAX_FRAME
HEAD = 65_536
CHUNK = 65_536

Oversized = Callable[[int | str | None, int], Awaitable[None]]


def oversized_text(size: int) -> str:
    return f"message of {size:,} bytes is over the limit of {MAX_MESSAGE:,} bytes; it was not read"


def request_id(head: bytes) -> int | str | None:
    """The top-level "id" of a JSON-RPC message from its first bytes, or None.

    Walks the object's members in order with the JSON decoder, so an "id" nested inside params is
    never taken for the request's; stops at the first member the head does not hold whole.
    """
    text = head.decode("utf-8", errors="ignore")
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    try:
        while True:
            key, at = decoder.raw_decode(text, _skip(text, at))
            at = _skip(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                return None
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
            at = _skip(text, at)
            ended = text.startswith(",", at) or text.startswith("}", at)
            if key == "id":
                # a number the head cuts short (12 of 123) is not ended by , or }
                ok = ended and valid_id(value)
                return value if ok else None
            if not text.startswith(",", at):
                return None
            at += 1
    except (ValueError, RecursionError):
        return None


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


NOT_TEXT = "message is not UTF-8 text; it was not read"


class BoundedLines:
    """An async iterator of stdin's lines (str) for the SDK's stdio_server(stdin=...). A line
    that is not UTF-8 is answered with on_not_text (the request's id, when its first bytes hold
    it) and never handed on: decoded with replacement characters it would be written into memory
    as something the client never sent."""

    def __init__(
        self,
        fd: int,
        on_oversized: Oversized,
        on_not_text: Callable[[int | str | None], Awaitable[None]] | None = None,
    ):
        self.fd = fd
        self.on_oversized = on_oversized
        self.on_not_text = on_not_text
        self._buffer = bytearray()
        self._eof = False

    def __aiter__(self):
        return self

    async def _read(self) -> bytes:
        """The next bytes of stdin; b"" (its end) once it cannot be read: a terminal hung up
        (EIO), fd 0 not open. The client is gone either way, and the end of stdin is how memory-mcp
        ends a connection (the answers still owed are waited for)."""
        try:
            return await anyio.to_thread.run_sync(os.read, self.fd, CHUNK, abandon_on_cancel=True)
        except OSError as e:
            log.warning("stdin cannot be read (%s): taken as its end", e.strerror or e)
            return b""

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n")
            if 0 <= end <= MAX_MESSAGE:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                text = await self._text(line)
                if text is None:
                    continue
                return text
            if len(self._buffer) > MAX_MESSAGE:
                await self._skip_oversized()
                continue
            if self._eof:
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    text = await self._text(line)
                    if text is not None:
                        return text
                raise StopAsyncIteration
            chunk = await self._read()
            if not chunk:
                self._eof = True
            self._buffer += chunk

    async def _text(self, line: bytes) -> str | None:
        """line as text, or None once it is answered as not UTF-8."""
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError:
            ident = request_id(line[:HEAD])
            log.warning(
                "stdin: a message of %d bytes is not UTF-8 (request id %r)", len(line), ident
            )
            if self.on_not_text is not None:
                await self.on_not_text(ident)
            return None

    async def _skip_oversized(self) -> None:
        head = bytes(self._buffer[:HEAD])
        size = len(self._buffer)
        end = self._buffer.find(b"\n")
        while end < 0:
            chunk = await self._read()
            if not chunk:
                break
            size += len(chunk)
            self._buffer = bytearray(chunk)
            end = self._buffer.find(b"\n")
        if end >= 0:
            size -= len(self._buffer) - end - 1
            del self._buffer[: end + 1]
        else:
            self._buffer.clear()
            self._eof = True
        ident = request_id(head)
        log.warning("stdin: a message of %d bytes skipped (request id %r)", size, ident)
        await self.on_oversized(ident, size)
