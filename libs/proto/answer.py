"""One request on one connection: read it, check it, hand it to the handler, send the reply.

Whatever goes wrong with one request is answered with an error message where the socket still
allows it, logged as one line, and the server goes on: a handler's ProtoError (or answerable
error) is its own clear text, anything else is "internal error" (the traceback goes to the log,
never to the peer). Bad input never makes a traceback: it is refused with a bounded text.

Every string a peer chose (a kind, an error naming its keys) reaches a log line through
escape.for_log, and lines about bad peers are throttled (a Throttle per socket). A frame over
LARGE_FRAME bytes is decoded and validated on a thread, so a big body does not stall the other
sockets' event loop. A reply that would exceed MAX_FRAME is never
sent: the peer gets a short error saying so, and the log a line naming the kind and the size.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from proto.bytebudget import ByteBudget
from proto.errors import (
    FrameCutShort,
    FrameError,
    FrameTimeout,
    FrameTooLarge,
    PeerClosed,
    ProtoError,
)
from proto.escape import for_log
from proto.frames import MAX_FRAME, decode_payload, encode_frame, read_payload
from proto.messages import HEALTH_PROBE, Body, Error, body_of, kind_of, parse_body

LARGE_FRAME = 64 * 1024
LINES_PER_WINDOW = 20  # log lines of one kind and socket about bad peers, per window
WINDOW_SECONDS = 10.0

# A handler takes the kinds it is served with (decode_request lets no other through), so it may
# name its own message type; a list of kind names cannot say which types those are.
Handler = Callable[[Any], Awaitable[Body]]
log = logging.getLogger("proto.server")


class Throttle:
    """At most LINES_PER_WINDOW lines of each kind per socket in WINDOW_SECONDS, so a peer that
    opens connections by the thousand cannot turn each into a log line; the first line of the
    next window says how many were left out."""

    def __init__(self) -> None:
        self._windows: dict[tuple[str, str], list] = {}

    def info(self, name: str, event: str, text: str, *args: object) -> None:
        now = time.monotonic()
        window = self._windows.setdefault((name, event), [now, 0, 0])
        if now - window[0] >= WINDOW_SECONDS:
            if window[2]:
                text += f" (and {window[2]} more like this in the last {WINDOW_SECONDS:g} s)"
            window[:] = [now, 0, 0]
        if window[1] < LINES_PER_WINDOW:
            window[1] += 1
            log.info(text, name, *args)
        else:
            window[2] += 1


class KindRefused(ProtoError):
    """A message kind this socket does not serve."""


def decode_request(payload: bytes, kinds: Collection[str]) -> tuple[str, Body]:
    """The kind and model of a request payload; FrameError, KindRefused or InvalidMessage."""
    kind, body = decode_payload(payload, bounded=True)
    if kind not in kinds:
        raise KindRefused(
            f"message kind {kind[:64]!r} is not served on this socket, which serves "
            f"{', '.join(sorted(kinds))}: is it the right socket? (runbook: wrong-socket)"
        )
    return kind, parse_body(kind, body)


def _health_probe(payload: bytes) -> bool:
    """Whether a refused request was a health check's probe (messages.HEALTH_PROBE)."""
    try:
        return decode_payload(payload, bounded=True)[1] == HEALTH_PROBE
    except ProtoError:
        return False


async def answer(
    reader: asyncio.StreamReader,
    handler: Handler,
    kinds: Collection[str],
    name: str,
    request_timeout: float,
    shown: tuple[type[Exception], ...],
    request_read: Callable[[], None] = lambda: None,
    throttle: Throttle | None = None,
    budget: ByteBudget | None = None,
) -> Body | None:
    """The reply to the one request on reader, or None when there is nobody to answer; the
    request's bytes are held in budget while they arrive (proto.bytebudget)."""
    _throttle = throttle or Throttle()
    try:
        payload = await read_payload(reader, timeout=request_timeout, budget=budget)
    except FrameCutShort as e:
        # The peer may have shut only its sending side and wait for a word on what went wrong;
        # if it closed both, the reply's write fails quietly in send_reply.
        _throttle.info(name, "frame", "%s: refused a frame: %s", e)
        return Error(text=str(e))
    except PeerClosed:
        _throttle.info(name, "closed", "%s: peer closed before a whole request")
        return None
    except FrameTimeout as e:
        _throttle.info(name, "slow", "%s: dropped a slow request: %s", e)
        return Error(text=str(e))
    except FrameError as e:
        _throttle.info(name, "frame", "%s: refused a frame: %s", for_log(e))
        return Error(text=str(e))
    request_read()
    try:
        if len(payload) > LARGE_FRAME:
            kind, message = await asyncio.to_thread(decode_request, payload, kinds)
        else:
            kind, message = decode_request(payload, kinds)
    except ProtoError as e:
        if _health_probe(payload):
            log.debug("%s: answered a health probe", name)
        else:
            _throttle.info(name, "request", "%s: refused a request: %s", for_log(e))
        return Error(text=str(e))
    try:
        return await handler(message)
    except shown as e:
        log.info("%s: %s refused: %s", name, kind, for_log(e))
        return Error(text=str(e))
    except Exception:
        log.exception("%s: %s failed", name, kind)
        return Error(text="internal error; see the service's log")


def reply_frame(reply: Body, name: str) -> bytes:
    """The frame of reply, or of a short error when reply is over MAX_FRAME."""
    kind = kind_of(reply)
    try:
        return encode_frame(kind, body_of(reply))
    except FrameTooLarge as e:
        log.error("%s: a %s reply was not sent: %s", name, kind, e)
        text = (
            f"the answer was too large to send ({kind} over the {MAX_FRAME}-byte frame limit);"
            " ask for less"
        )
        return encode_frame("error", {"text": text})


async def send_reply(
    writer: asyncio.StreamWriter,
    reply: Body,
    name: str,
    reply_timeout: float,
    throttle: Throttle | None = None,
) -> None:
    """Send reply whole and close; a peer that does not take it within reply_timeout is cut."""
    frame = reply_frame(reply, name)
    _throttle = throttle or Throttle()
    try:
        async with asyncio.timeout(reply_timeout):
            writer.write(frame)
            await writer.drain()
            writer.close()  # flushes what drain left buffered, then closes
            await writer.wait_closed()
    except TimeoutError:
        _throttle.info(
            name, "reply", "%s: cut a peer that did not read its %d-byte reply in time", len(frame)
        )
    except (ConnectionError, OSError):
        pass
