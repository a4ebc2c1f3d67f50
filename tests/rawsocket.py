"""Raw bytes to a Unix socket, for tests that send what no well-behaved client would."""

import socket
import struct
from pathlib import Path

from proto.frames import decode_payload


def answers(path: str | Path) -> bool:
    """True when something accepts connections on path."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def send_raw(
    path: str | Path, data: bytes, *, close_write: bool = True, timeout: float = 30.0
) -> bytes:
    """Send data (closing our side unless told not to) and return every byte the peer answers."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    chunks = []
    try:
        s.connect(str(path))
        try:
            s.sendall(data)
            if close_write:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may refuse a frame before it is all sent
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        s.close()
    return b"".join(chunks)


def exchange(
    path: str | Path, data: bytes, *, close_write: bool = True, timeout: float = 30.0
) -> tuple[str, dict] | None:
    """Send data and decode the one reply frame: (kind, body), or None when the peer just closed."""
    reply = send_raw(path, data, close_write=close_write, timeout=timeout)
    if not reply:
        return None
    (length,) = struct.unpack(">I", reply[:4])
    assert length == len(reply) - 4, "a reply frame that is not whole"
    return decode_payload(reply[4:])
