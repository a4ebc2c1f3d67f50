"""Peers that announce a frame and send it slowly, for tests of what requests still arriving
may hold (proto.bytebudget)."""

import socket
import time

from proto.frames import HEADER, MAX_FRAME


class Partial:
    """Connections that each announce a whole frame and send only part of it."""

    def __init__(self):
        self.socks: list[socket.socket] = []

    def open(self, path, count=1, length=MAX_FRAME, part=256 * 1024):
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            self.socks.append(s)
            s.connect(str(path))
            s.sendall(HEADER.pack(length) + b"\0" * part)

    def close(self):
        for s in self.socks:
            s.close()
        self.socks.clear()


def until(check, seconds=5.0) -> bool:
    """Wait until check() is true, at most seconds; its last answer."""
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)
    return check()


def garbage(length: int, sent: int) -> bytes:
    """A frame announcing length bytes of payload, sent is how many of them follow."""
    return HEADER.pack(length) + b"\xc1" * sent  # 0xc1 is never valid MessagePack
