"""One request, one reply: the client side of every socket, blocking (CLI, tests) and async (roles).

request() connects, writes one frame, reads one frame and closes. A reply of kind error becomes a
RemoteError carrying the peer's text; anything else is returned as its model.
"""

import asyncio
import os
import socket

from proto.errors import FrameTimeout, PeerClosed, ProtoError, Unreachable
from proto.frames import HEADER, check_length, decode_payload, encode_frame, read_frame, write_frame
from proto.messages import Body, Error, body_of, kind_of, parse_body


class RemoteError(ProtoError):
    """The peer answered with an error message."""


def _reply(kind: str, body: dict) -> Body:
    message = parse_body(kind, body)
    if isinstance(message, Error):
        raise RemoteError(message.text)
    return message


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 65536))
        if not chunk:
            raise PeerClosed("connection closed before a whole reply arrived")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def request(path: str | os.PathLike, message: Body, timeout: float = 30.0) -> Body:
    """Send one message to the socket at path and return the reply's model."""
    frame = encode_frame(kind_of(message), body_of(message))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(os.fspath(path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as e:
            raise Unreachable(f"nothing answers on {os.fspath(path)}: {e.strerror}") from None
        except TimeoutError:
            raise Unreachable(f"nothing answers on {os.fspath(path)}: timed out") from None
        except OSError as e:
            raise Unreachable(f"cannot connect to {os.fspath(path)}: {e.strerror}") from None
        try:
            sock.sendall(frame)
            (length,) = HEADER.unpack(_recv_exactly(sock, HEADER.size))
            check_length(length)
            payload = _recv_exactly(sock, length)
        except TimeoutError:
            raise FrameTimeout(f"no reply from {os.fspath(path)} in {timeout:g} seconds") from None
        except (ConnectionError, BrokenPipeError):
            raise PeerClosed(f"{os.fspath(path)} closed the connection") from None
    finally:
        sock.close()
    return _reply(*decode_payload(payload))


async def arequest(path: str | os.PathLike, message: Body, timeout: float = 30.0) -> Body:
    """The async twin of request(), for roles that call other roles."""
    try:
        async with asyncio.timeout(timeout):
            try:
                reader, writer = await asyncio.open_unix_connection(os.fspath(path))
            except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as e:
                raise Unreachable(f"nothing answers on {os.fspath(path)}: {e.strerror}") from None
            except OSError as e:
                raise Unreachable(f"cannot connect to {os.fspath(path)}: {e.strerror}") from None
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
    return _reply(kind, body)
