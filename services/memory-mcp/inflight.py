"""The requests read from stdin and not yet answered, so that closing stdin never cancels one.

The SDK takes the end of stdin as the end of the connection: it cancels every handler still
running and answers its request "Connection closed". A memory write already sent to memoryd is
applied all the same, so that answer would be false. memory-mcp therefore holds back the end of
stdin until every request it let through has been answered (or the client cancelled it), for at
most a bound: memoryd's own timeout and a margin, so a client that goes away never keeps the
process longer than a call can take.

Requests are counted as their lines go by (the id of each request), and answered as the SDK's
answers go out on the write stream (AnswerWatch wraps it), so a request whose handler has not
started yet when stdin ends is waited for too.

The same count bounds how far reading runs ahead of answering (room): a client that sends
requests and never reads its answers would otherwise have each read request held as a task
waiting to write, without end. Reading waits while MOST requests are unanswered; counts the SDK
will never answer (nothing is being written and no call to memoryd is under way for GRACE
seconds) are let go, so that they never stop the reading for good.

A cancel uncounts its request (the SDK sends no answer to a request cancelled while its handler
runs), but an answer already on its way when the cancel came still goes out, and waits as a task
while the client does not read: so each answer waiting to go out for a request no longer counted
takes a place in the bound too, until it is out. A client that cancels every request it sends and
never reads is held to MOST like any other.
"""

import logging
from collections import Counter
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from memory_mcp.screen import valid_id

log = logging.getLogger("memory_mcp.inflight")

CANCELLED = "notifications/cancelled"
POLL = 0.1
# How long requests are waited for once no call to memoryd is in progress: the SDK answers any
# other request at once, so one still unanswered by then never will be.
GRACE = 1.0
# Requests read and not answered, at most: then stdin is not read until an answer goes out.
MOST = 64


class InFlight:
    """The ids of the requests let through to the SDK and not answered yet."""

    def __init__(self) -> None:
        self._ids: Counter = Counter()
        self._sending: Counter = Counter()  # answers handed to the write stream, not out yet
        self._idle = anyio.Event()
        self._idle.set()

    def __len__(self) -> int:
        return sum(self._ids.values())

    def held(self) -> int:
        """Requests unanswered, and answers waiting to go out for requests no longer counted
        (cancelled after their answer was on its way): each is a task memory-mcp keeps."""
        unowed = sum(max(0, n - self._ids[key]) for key, n in self._sending.items())
        return len(self) + unowed

    def sending(self, ident: Any) -> None:
        """An answer to ident is handed to the write stream."""
        if valid_id(ident):
            self._sending[_key(ident)] += 1

    def sent(self, ident: Any) -> None:
        """The answer to ident went out (or could not)."""
        if not valid_id(ident):
            return
        key = _key(ident)
        self._sending[key] -= 1
        if self._sending[key] <= 0:
            del self._sending[key]

    def read(self, message: dict[str, Any]) -> None:
        """A message the SDK is about to get: a request is counted, a cancel uncounts its id."""
        method = message.get("method")
        if method is None:
            return
        if "id" in message:
            if not valid_id(message["id"]):
                return  # screen.py answers such a request itself; it never reaches the SDK
            self._ids[_key(message["id"])] += 1
            if self._idle.is_set():
                self._idle = anyio.Event()
        elif method == CANCELLED:
            params = message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                self.answered(params["requestId"])

    async def room(self, stuck: Callable[[], bool], most: int | None = None) -> None:
        """Return once fewer than most requests are held (held()). stuck(): nothing can answer
        them now (no write under way, no call to memoryd); after GRACE seconds of that, the
        counted ids are ones the SDK dropped without a word, and are let go. An answer waiting
        to go out is never let go: it is a write under way, and ends when the client reads."""
        most = MOST if most is None else most
        stuck_since: float | None = None
        while self.held() >= most:
            await anyio.sleep(POLL)
            if not stuck():
                stuck_since = None
                continue
            now = anyio.current_time()
            stuck_since = now if stuck_since is None else stuck_since
            if now - stuck_since >= GRACE:
                log.warning("stdin: %d requests the SDK never answered are let go", len(self))
                self._ids.clear()
                self._idle.set()

    def answered(self, ident: Any) -> None:
        if not valid_id(ident):
            return  # a cancel naming a list or an object: no request has such an id
        key = _key(ident)
        if self._ids[key] > 0:
            self._ids[key] -= 1
            if self._ids[key] == 0:
                del self._ids[key]
        if not self._ids:
            self._idle.set()

    async def settled(self, bound: float, busy: Callable[[], bool]) -> bool:
        """Wait until every request counted was answered, at most bound seconds; True if so.
        Only a call to memoryd (busy()) is worth the whole bound: a request the SDK never answers
        (it drops some without a word) is waited for GRACE seconds after the last such call."""
        quiet_since: float | None = None
        with anyio.move_on_after(bound):
            while self._ids:
                with anyio.move_on_after(POLL):
                    await self._idle.wait()
                if busy():
                    quiet_since = None
                    continue
                now = anyio.current_time()
                quiet_since = now if quiet_since is None else quiet_since
                if now - quiet_since >= GRACE:
                    break
        return not self._ids


def _key(ident: Any) -> tuple[str, Any]:
    """1 and "1" are two ids."""
    return (type(ident).__name__, ident)


class AnswerWatch:
    """The SDK's write stream, noting each answer (a result or an error) as it goes out."""

    def __init__(self, inner: Any, in_flight: InFlight) -> None:
        self._inner = inner
        self._in_flight = in_flight

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            await self._inner.send(item)
            return
        self._in_flight.sending(message.id)
        try:
            await self._inner.send(item)
        finally:
            self._in_flight.sent(message.id)
        if message.id is not None:
            self._in_flight.answered(message.id)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "AnswerWatch":
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None
