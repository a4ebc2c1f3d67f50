"""What all of a process's connections may hold of requests still arriving, together.

A frame's payload is buffered whole before it is decoded, so each connection may hold up to
MAX_FRAME (1 MiB) of a request its peer sends slowly, within the request deadline. The caps bound
the connections (576 for memoryd), not what they hold together: 576 slow 1 MiB requests would
take over half a gigabyte. So a server takes a frame's announced length from one budget shared by
every socket of the process (REQUESTS) after the 4-byte header and before reading the payload,
and gives it back when the payload is read or the read ends any other way (the peer closed, the
deadline passed, the server stopped).

REQUEST_BUDGET is 64 MiB: 64 whole frames at once, far more than the honest peers (one loopd, one
brokerd, the owner) ever send together, and, with the copy a payload costs while it is completed,
a bound of about 128 MiB of unread requests, which leaves room under a 512 MiB container for the
rest of memoryd. Frames of at most SMALL_FRAME bytes (every memory_block, recall and memory call
an honest peer sends) are not counted and never wait: a connection's stream may buffer that much
before any frame anyway, and the connection caps bound it. A larger frame that does not fit waits
its turn (first come, first served) for at most WAIT_SECONDS, then is refused in one line.

Outside a frame's payload, and while a frame waits for room, a connection buffers only what its
stream reads ahead: the server's streams (BoundedStream) read at most READ_CHUNK bytes at a time
and stop reading while twice STREAM_LIMIT is unread (asyncio and uvloop alone read 256 KiB at a
time and stop past 128 KiB), so a connection holds at most 64 KiB ahead, and 96 KiB with a small
frame, besides its budgeted payload.
"""

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from proto.errors import FrameError

REQUEST_BUDGET = 64 * 1024 * 1024
SMALL_FRAME = 64 * 1024
WAIT_SECONDS = 2.0
READ_CHUNK = 32 * 1024
STREAM_LIMIT = 16 * 1024  # the stream stops reading past twice this, until it is read


class RequestsBusy(FrameError):
    """A large request found no room in the budget in time."""


@dataclass(eq=False)
class _Waiter:
    size: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    granted: bool = field(default=False)


class ByteBudget:
    """A count of bytes that the frames being received hold, at most total.

    Safe across event loops in threads (a test's servers may each run their own); a waiter is
    woken on its own loop.
    """

    def __init__(self, total: int = REQUEST_BUDGET, wait: float = WAIT_SECONDS):
        if total < 1:
            raise ValueError("a byte budget must be at least 1 byte")
        self.total = total
        self.wait = wait
        self._used = 0
        self._queue: deque[_Waiter] = deque()
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @contextlib.asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        """Hold size bytes for the body of the with, waiting at most self.wait for room.

        A size of at most SMALL_FRAME is not counted; one over the total is refused at once.
        """
        if size <= SMALL_FRAME:
            yield
            return
        await self._take(size)
        try:
            yield
        finally:
            self._give(size)

    def _refusal(self, size: int) -> RequestsBusy:
        room = f"{self.total >> 20} MiB" if self.total % (1 << 20) == 0 else f"{self.total} bytes"
        return RequestsBusy(
            f"too many large requests are arriving at once: this {size}-byte one found no room "
            f"in the {room} that requests being received may hold together; send it again shortly"
        )

    async def _take(self, size: int) -> None:
        if size > self.total:
            raise self._refusal(size)
        with self._lock:
            if not self._queue and self._used + size <= self.total:
                self._used += size
                return
            loop = asyncio.get_running_loop()
            waiter = _Waiter(size, loop, loop.create_future())
            self._queue.append(waiter)
        try:
            async with asyncio.timeout(self.wait):
                await waiter.future
        except BaseException as e:
            with self._lock:
                if waiter.granted:  # room came as the wait ended: it is given back
                    self._used -= size
                else:
                    self._queue.remove(waiter)
                woken = self._grant()
            self._wake(woken)
            if isinstance(e, TimeoutError):
                raise self._refusal(size) from None
            raise

    def _give(self, size: int) -> None:
        with self._lock:
            self._used -= size
            woken = self._grant()
        self._wake(woken)

    def _grant(self) -> list[_Waiter]:
        """The waiters that now fit, in order, their bytes counted (the lock held)."""
        woken = []
        while self._queue and self._used + self._queue[0].size <= self.total:
            waiter = self._queue.popleft()
            waiter.granted = True
            self._used += waiter.size
            woken.append(waiter)
        return woken

    def _wake(self, woken: list[_Waiter]) -> None:
        for waiter in woken:
            try:
                waiter.loop.call_soon_threadsafe(_settle, waiter.future)
            except RuntimeError:  # its loop is closed: nobody will use the bytes
                self._give(waiter.size)


def _settle(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class BoundedStream(asyncio.BufferedProtocol):
    """What a server connection's transport reads into: at most READ_CHUNK bytes at a time, into
    one buffer its server shares (each read is handed on before the next), then on to a stream.

    It wraps the stream's own protocol rather than extending it: uvloop reads a Protocol's
    subclass into its own 256 KiB buffer whatever get_buffer says, and only a protocol that is
    not one gets its reads from get_buffer.
    """

    def __init__(self, stream: asyncio.StreamReaderProtocol, chunk: bytearray):
        self.stream = stream
        self._chunk = chunk

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.stream.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.stream.connection_lost(exc)

    def pause_writing(self) -> None:
        self.stream.pause_writing()

    def resume_writing(self) -> None:
        self.stream.resume_writing()

    def eof_received(self) -> bool | None:
        return self.stream.eof_received()

    def get_buffer(self, sizehint: int) -> bytearray:
        return self._chunk

    def buffer_updated(self, nbytes: int) -> None:
        self.stream.data_received(bytes(self._chunk[:nbytes]))


def bounded_stream(chunk: bytearray) -> tuple[asyncio.StreamReader, BoundedStream]:
    """A reader and the protocol its transport reads into, for one server connection; the
    connection's StreamWriter takes the stream's own protocol (BoundedStream.stream)."""
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    return reader, BoundedStream(asyncio.StreamReaderProtocol(reader), chunk)


# Every server of the process takes from this one budget (proto.server.serve_unix).
REQUESTS = ByteBudget()
