"""Frames: a 4-byte big-endian length, then that many bytes of MessagePack.

The payload is a map of exactly two keys, kind (a string) and body (a map). The length is checked
against MAX_FRAME before a single byte of payload is read, so a peer cannot make us buffer more;
a server also holds the length in the process's budget for requests being received
(proto.bytebudget), so all its peers together cannot either.
"""

import asyncio
import socket
import struct
import time
from collections.abc import Callable

import msgpack

from proto.bytebudget import ByteBudget
from proto.errors import FrameCutShort, FrameMalformed, FrameTimeout, FrameTooLarge, PeerClosed

MAX_FRAME = 1_048_576
HEADER = struct.Struct(">I")
MAX_MAP_KEYS = 256
MAX_LIST_ITEMS = 4096


def encode_payload(kind: str, body: dict) -> bytes:
    """The MessagePack bytes of one message. A lone surrogate (a byte of a path that is not
    UTF-8, as Python holds it) goes as its escape: a frame's text must be UTF-8, and a message
    naming such a path must still be sent, not fail after its work was done."""
    return msgpack.packb(
        {"kind": kind, "body": body}, use_bin_type=True, unicode_errors="backslashreplace"
    )


def encode_frame(kind: str, body: dict) -> bytes:
    """One whole frame: the length prefix and the payload."""
    payload = encode_payload(kind, body)
    if len(payload) > MAX_FRAME:
        raise FrameTooLarge(f"frame of {len(payload)} bytes is over the limit of {MAX_FRAME}")
    return HEADER.pack(len(payload)) + payload


def check_length(length: int) -> None:
    if length < 1 or length > MAX_FRAME:
        raise FrameTooLarge(f"frame length {length} is outside 1 to {MAX_FRAME} bytes")


def payload_length(header: bytes) -> int:
    """The payload length a frame's 4-byte header announces, refused unless 1 to MAX_FRAME."""
    (length,) = HEADER.unpack(header)
    check_length(length)
    return length


def decode_payload(payload: bytes, *, bounded: bool = False) -> tuple[str, dict]:
    """Split a payload into its kind and body, refusing anything but {kind: str, body: map}.

    bounded (a server reading a request): a map of more than MAX_MAP_KEYS keys or a list of more
    than MAX_LIST_ITEMS items anywhere is refused before it is built, since no request has one.
    """
    limits = {"max_map_len": MAX_MAP_KEYS, "max_array_len": MAX_LIST_ITEMS} if bounded else {}
    try:
        message = msgpack.unpackb(payload, raw=False, strict_map_key=True, **limits)
    except (ValueError, TypeError, msgpack.UnpackException, RecursionError) as e:
        detail = (
            f" (or holds a map over {MAX_MAP_KEYS} keys or a list over {MAX_LIST_ITEMS} items)"
            if bounded
            else ""
        )
        raise FrameMalformed(f"frame payload is not valid MessagePack{detail}") from e
    if not isinstance(message, dict):
        raise FrameMalformed("frame payload is not a map")
    if set(message) != {"kind", "body"}:
        raise FrameMalformed("frame payload must have exactly the keys kind and body")
    kind, body = message["kind"], message["body"]
    if not isinstance(kind, str):
        raise FrameMalformed("frame kind is not a string")
    if not isinstance(body, dict):
        raise FrameMalformed("frame body is not a map")
    return kind, body


async def read_payload(
    reader: asyncio.StreamReader, timeout: float | None = None, budget: ByteBudget | None = None
) -> bytes:
    """Read one frame's payload bytes from a stream, within timeout seconds if given.

    With a budget (a server reading a request), the announced length is held in it while the
    payload arrives, so all connections together never buffer more than it allows; a large frame
    that finds no room in time is RequestsBusy.
    """
    length = 0  # not known until the whole header is in
    try:
        async with asyncio.timeout(timeout):
            length = payload_length(await reader.readexactly(HEADER.size))
            if budget is None:
                return await reader.readexactly(length)
            async with budget.hold(length):
                return await reader.readexactly(length)
    except asyncio.IncompleteReadError as e:
        raise _closed_early(len(e.partial), length) from e
    except TimeoutError as e:
        raise FrameTimeout("request not complete in time") from e
    except ConnectionError as e:
        raise PeerClosed("connection closed before a whole frame arrived") from e


def _closed_early(got: int, length: int) -> PeerClosed:
    """What a read that met the end of the stream is: a peer that closed before sending anything
    (nothing to answer), or a frame cut short, which a server answers with its sentence while the
    peer may still read (it shut only its sending side)."""
    if length:
        return FrameCutShort(f"frame cut short: {got:,} of its {length:,} bytes arrived")
    if got:
        return FrameCutShort(
            f"frame cut short: {got} of the {HEADER.size} bytes of its length arrived"
        )
    return PeerClosed("connection closed before a whole frame arrived")


class _Wait:
    """How long a blocking read of one frame may take in all (until, a time.monotonic(); None:
    for ever), and the watch() to call each `every` seconds until the frame is whole. The
    socket's timeout is set before each recv() to what is left, so that a peer sending a byte
    at a time, or stopping part way, cannot stretch the wait: each recv() on its own would be
    answered in time."""

    def __init__(self, until: float | None, watch: Callable[[], None] | None, every: float):
        self.until, self.watch, self.every = until, watch, every
        self.due = time.monotonic() + every

    def recv(self, sock: socket.socket, most: int) -> bytes:
        """Up to most bytes (b"": the peer closed), watching meanwhile; TimeoutError once the
        wait is spent. watch() is called only once a read has waited: while the peer's bytes
        keep coming it is not asked whether it still answers."""
        while True:
            sock.settimeout(self._slice())
            try:
                return sock.recv(most)
            except TimeoutError:
                self._watch_if_due()

    def _slice(self) -> float | None:
        """The next recv()'s timeout: what is left of the wait, or until watch() is due."""
        now = time.monotonic()
        left = None if self.until is None else self.until - now
        if left is not None and left <= 0:
            raise TimeoutError
        if self.watch is None:
            return left
        to_watch = max(self.due - now, 0.001)
        return to_watch if left is None else min(left, to_watch)

    def _watch_if_due(self) -> None:
        if self.watch is not None and time.monotonic() >= self.due:
            self.watch()  # what it raises (the peer stopped answering) ends the read
            self.due = time.monotonic() + self.every


def _recv_exactly(sock: socket.socket, n: int, wait: _Wait) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = wait.recv(sock, min(n - got, 65536))
        if not chunk:
            raise PeerClosed("connection closed before a whole reply arrived")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv_payload(
    sock: socket.socket,
    until: float | None = None,
    *,
    watch: Callable[[], None] | None = None,
    every: float = 0.0,
) -> bytes:
    """The blocking twin of read_payload, for the blocking client: one frame's payload bytes.

    The whole frame must be in by until (a time.monotonic()), else TimeoutError; without until,
    the socket's own timeout bounds the whole frame, not each recv(). watch() is called each
    `every` seconds until the frame is whole, whatever has arrived (a peer stopped part way
    through its answer is found as one stopped before it), and what it raises ends the read. A
    peer that closes early is PeerClosed. The socket's timeout is left as it was.
    """
    timeout = sock.gettimeout()
    if until is None and timeout is not None:
        until = time.monotonic() + timeout
    wait = _Wait(until, watch, every)
    try:
        return _recv_exactly(sock, payload_length(_recv_exactly(sock, HEADER.size, wait)), wait)
    finally:
        sock.settimeout(timeout)


async def read_frame(
    reader: asyncio.StreamReader, timeout: float | None = None
) -> tuple[str, dict]:
    """Read one frame from a stream, within timeout seconds if given."""
    return decode_payload(await read_payload(reader, timeout))


async def write_frame(
    writer: asyncio.StreamWriter, kind: str, body: dict, timeout: float | None = None
) -> None:
    """Write one frame and wait until it is handed to the socket, within timeout if given."""
    await write_bytes(writer, encode_frame(kind, body), timeout)


async def write_bytes(writer: asyncio.StreamWriter, frame: bytes, timeout: float | None) -> None:
    writer.write(frame)
    try:
        async with asyncio.timeout(timeout):
            await writer.drain()
    except TimeoutError as e:
        raise FrameTimeout("the peer did not read its reply in time") from e
    except ConnectionError as e:
        raise PeerClosed("connection closed while writing a frame") from e
