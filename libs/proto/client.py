"""One request, one reply: the client side of every socket, blocking (CLI, tests) and async (roles).

request() connects, writes one frame, reads one frame and closes. A reply of kind error becomes a
RemoteError carrying the peer's text; anything else is returned as its model. Given reply=Model,
request() returns that model's type (a reply of another kind is UnexpectedReply), so the caller
needs no isinstance check.

A connect that is refused (a server restarting) or finds the listen queue full (EAGAIN) is tried
again, with a growing pause, for at most CONNECT_RETRY seconds: a burst of clients is served, a
socket nobody serves is reported after that second.

A request's timeout is the whole exchange's: a peer that sends its reply a byte at a time, or
stops part way through it, is given up on when the timeout is spent, as one that sends nothing.

request_watched() is request() for work the peer may spend minutes on (a reindex, a backup): the
reply is waited for a slice at a time, and between slices, until its last byte is in, the
caller's watch() asks whether the peer still answers at all (on a second connection), so a peer
that stopped, before its reply or part way through it, is found in seconds while one that works
is waited for.
"""

import asyncio
import os
import socket
import time
from collections.abc import Callable
from typing import TypeVar, overload

from proto.errors import FrameTimeout, PeerClosed, ProtoError, UnexpectedReply, Unreachable
from proto.frames import decode_payload, encode_frame, read_frame, recv_payload, write_frame
from proto.messages import KIND_OF, Body, Error, body_of, kind_of, parse_body

Reply = TypeVar("Reply", bound=Body)

CONNECT_RETRY = 1.0
_FIRST_PAUSE = 0.01
_LONGEST_PAUSE = 0.2
_RETRIED = (ConnectionRefusedError, BlockingIOError, InterruptedError)
# sun_path holds 108 bytes on Linux, the last a NUL.
SOCKET_PATH_MAX = 107


def _pauses(budget: float):
    """The pauses between connect attempts, adding up to at most budget seconds."""
    pause, spent = _FIRST_PAUSE, 0.0
    while spent + pause <= budget:
        yield pause
        spent += pause
        pause = min(pause * 2, _LONGEST_PAUSE)


def _why(e: OSError, path: str) -> str:
    """What went wrong, in words: a path too long for a Unix socket has no strerror."""
    if e.strerror:
        return e.strerror
    size = len(os.fsencode(path))
    if size > SOCKET_PATH_MAX:
        return (
            f"the path is {size} bytes, longer than a Unix socket path may be ({SOCKET_PATH_MAX})"
        )
    return str(e) or type(e).__name__


class RemoteError(ProtoError):
    """The peer answered with an error message."""


def _reply(kind: str, body: dict, expected: type[Reply]) -> Reply:
    message = parse_body(kind, body)
    if isinstance(message, Error):
        raise RemoteError(message.text)
    if not isinstance(message, expected):
        wanted = KIND_OF.get(expected, expected.__name__)
        raise UnexpectedReply(f"answered {kind}, not {wanted}", type(message).__name__)
    return message


def _connect(path: str, timeout: float) -> socket.socket:
    """A socket connected to path, trying a refused or full socket again for a short while."""
    pauses = _pauses(min(CONNECT_RETRY, timeout))
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            return sock
        except _RETRIED as e:
            sock.close()
            pause = next(pauses, None)
            if pause is None:
                raise Unreachable(f"nothing answers on {path}: {e.strerror}") from None
            time.sleep(pause)
        except (FileNotFoundError, NotADirectoryError) as e:
            sock.close()
            raise Unreachable(f"nothing answers on {path}: {e.strerror}") from None
        except TimeoutError:
            sock.close()
            raise Unreachable(f"nothing answers on {path}: timed out") from None
        except OSError as e:
            sock.close()
            raise Unreachable(f"cannot connect to {path}: {_why(e, path)}") from None


@overload
def request(path: str | os.PathLike, message: Body, timeout: float = 30.0) -> Body: ...
@overload
def request(
    path: str | os.PathLike, message: Body, timeout: float = 30.0, *, reply: type[Reply]
) -> Reply: ...
def request(
    path: str | os.PathLike, message: Body, timeout: float = 30.0, *, reply: type[Body] = Body
) -> Body:
    """Send one message to the socket at path and return the reply's model (of type reply)."""
    payload = _exchange(path, encode_frame(kind_of(message), body_of(message)), timeout)
    return _reply(*decode_payload(payload), reply)


def request_raw(path: str | os.PathLike, kind: str, body: dict, timeout: float = 30.0) -> str:
    """Send one frame of kind with body as it is (not a model: a health check's probe, a body
    the peer refuses) and return the kind of the reply, whatever it is."""
    return decode_payload(_exchange(path, encode_frame(kind, body), timeout))[0]


def request_watched(
    path: str | os.PathLike,
    message: Body,
    timeout: float,
    *,
    reply: type[Reply],
    watch: Callable[[], None],
    every: float,
) -> Reply:
    """request(), waiting up to timeout seconds in all for the reply, and calling watch() every
    `every` seconds meanwhile; whatever watch() raises (the peer no longer answers) ends the
    wait, the connection closed."""
    frame = encode_frame(kind_of(message), body_of(message))
    payload = _exchange(path, frame, timeout, watch=watch, every=every)
    return _reply(*decode_payload(payload), reply)


def _left(until: float) -> float:
    """The seconds left before until; TimeoutError when none are."""
    left = until - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _exchange(
    path: str | os.PathLike,
    frame: bytes,
    timeout: float,
    watch: Callable[[], None] | None = None,
    every: float = 0.0,
) -> bytes:
    """frame sent to the socket at path, and the reply's payload (watched: request_watched).

    timeout bounds the whole exchange, from the connect to the reply's last byte, whatever pace
    the peer sends at, not each read on the socket."""
    until = time.monotonic() + timeout
    sock = _connect(os.fspath(path), timeout)
    try:
        try:
            sock.settimeout(_left(until))
            sock.sendall(frame)  # its timeout bounds the whole send
            return recv_payload(sock, until, watch=watch, every=every)
        except TimeoutError:
            raise FrameTimeout(f"no reply from {os.fspath(path)} in {timeout:g} seconds") from None
        except (ConnectionError, BrokenPipeError):
            raise PeerClosed(f"{os.fspath(path)} closed the connection") from None
    finally:
        sock.close()


async def _aconnect(path: str, timeout: float):
    pauses = _pauses(min(CONNECT_RETRY, timeout))
    while True:
        try:
            return await asyncio.open_unix_connection(path)
        except _RETRIED as e:
            pause = next(pauses, None)
            if pause is None:
                raise Unreachable(f"nothing answers on {path}: {e.strerror}") from None
            await asyncio.sleep(pause)
        except (FileNotFoundError, NotADirectoryError) as e:
            raise Unreachable(f"nothing answers on {path}: {e.strerror}") from None
        except OSError as e:
            raise Unreachable(f"cannot connect to {path}: {_why(e, path)}") from None


@overload
async def arequest(path: str | os.PathLike, message: Body, timeout: float = 30.0) -> Body: ...
@overload
async def arequest(
    path: str | os.PathLike, message: Body, timeout: float = 30.0, *, reply: type[Reply]
) -> Reply: ...
async def arequest(
    path: str | os.PathLike, message: Body, timeout: float = 30.0, *, reply: type[Body] = Body
) -> Body:
    """The async twin of request(), for roles that call other roles."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await _aconnect(os.fspath(path), timeout)
            try:
                await write_frame(writer, kind_of(message), body_of(message))
                kind, body = await read_frame(reader)
            finally:
                writer.close()
                try:
                    await writer.wait_closed()
                except (ConnectionError, OSError):
                    pass
    except TimeoutError:
        raise FrameTimeout(f"no reply from {os.fspath(path)} in {timeout:g} seconds") from None
    return _reply(kind, body, reply)
