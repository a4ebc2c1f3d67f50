"""Whether the peer of the request being answered still waits for the answer.

A caller that gave up (brokerd's 30-second limit) closes its connection and tells its model the
call failed. A server that applies the call after that, because it read the frame late (the
process was stopped, the machine swapped), would make that answer a lie. So the server's
connection task holds a probe of its socket, and a handler about to make a change it cannot take
back asks it first: the peer is gone when it closed its end of the connection whole. The probe
polls the socket's descriptor without reading, so it may be asked from any thread.
"""

import contextvars
import select
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
        # POLLHUP only once the peer closed its end whole: a peer that shut down only its
        # sending side after the request (a one-request client may) still waits for the answer,
        # and reads as POLLRDHUP alone.
        poller = select.poll()
        poller.register(fd, 0)
        events = dict(poller.poll(0)).get(fd, 0)
        return bool(events & (select.POLLHUP | select.POLLERR | select.POLLNVAL))

    return gone


def hold(probe: Probe | None) -> contextvars.Token:
    """Make probe the current request's (its connection task's context)."""
    return _current.set(probe)


def current() -> Probe | None:
    """The probe of the request this task answers, None outside a server's connection."""
    return _current.get()
