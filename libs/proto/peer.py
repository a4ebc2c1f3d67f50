"""Whether the peer of the request being answered still waits for the answer.

A caller that gave up (brokerd's 30-second limit) closes its connection and tells its model the
call failed. A server that applies the call after that, because it read the frame late (the
process was stopped, the machine swapped), would make that answer a lie. So the server's
connection task holds a probe of its socket, and a handler about to make a change it cannot take
back asks it first: the peer is gone when its end is closed and nothing more is left to read.
The probe peeks at a duplicate of the socket's descriptor, so it may be asked from any thread,
and it never consumes a byte.
"""

import contextvars
import os
import socket
from collections.abc import Callable
from typing import Protocol

Probe = Callable[[], bool]

_current: contextvars.ContextVar[Probe | None] = contextvars.ContextVar("peer_probe", default=None)


class HasFileno(Protocol):
    def fileno(self) -> int: ...


def probe_of(sock: HasFileno | None) -> Probe | None:
    """The probe of a connection's socket (asyncio's transport socket, or a socket)."""
    if sock is None:
        return None
    fd = sock.fileno()

    def gone() -> bool:
        try:
            peek = socket.socket(fileno=os.dup(fd))
        except OSError:
            return True  # the connection is already closed on this side
        try:
            return peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False  # open, with nothing more sent: it waits
        except OSError:
            return True  # reset
        finally:
            peek.close()

    return gone


def hold(probe: Probe | None) -> contextvars.Token:
    """Make probe the current request's (its connection task's context)."""
    return _current.set(probe)


def current() -> Probe | None:
    """The probe of the request this task answers, None outside a server's connection."""
    return _current.get()
