"""The frames between memoryd and its embedding child (embedworker.py): a 4-byte big-endian length,
then msgpack.

The child reads and writes them blocking: it has nothing else to do. memoryd reads and writes them
within a deadline, on its ends of the channels made non-blocking, so that a child that stops
answering (frozen, stopped, stuck in the model) costs a recall or a batch a bounded wait rather
than the thread: a pipe holds 64 KB, so even writing a batch to a child that does not read can
block. The ends are the file and socket objects, not their numbers: an end closed meanwhile by
another thread (the child restarted) fails its next read rather than reading a number that may
have been given to the next child's pipe.
"""

import select
import socket
import struct
import time

import msgpack

HEAD = struct.Struct(">I")
MOST = 64 * 2**20
# Read at most this much at a time (a length read from a damaged frame can be up to MOST).
CHUNK = 1 << 20


class Late(Exception):  # noqa: N818 (not an error: the caller says what it means)
    """The deadline passed before the frame was read or written whole."""


def write(stream, payload: object) -> None:
    """The child's side: write one frame, blocking."""
    data = msgpack.packb(payload, use_bin_type=True)
    stream.write(HEAD.pack(len(data)) + data)
    stream.flush()


def read(stream) -> object | None:
    """The child's side: the next message, None at the end of the stream."""
    head = stream.read(HEAD.size)
    if len(head) < HEAD.size:
        return None
    (size,) = HEAD.unpack(head)
    if size > MOST:
        raise ValueError(f"a frame of {size} bytes")
    data = stream.read(size)
    if len(data) < size:
        return None
    return msgpack.unpackb(data, raw=False)


def send(end, payload: object, deadline: float) -> None:
    """memoryd's side: write one frame to end (a non-blocking raw file or socket) by deadline
    (time.monotonic()); Late when it cannot, OSError when the child is gone."""
    data = msgpack.packb(payload, use_bin_type=True)
    view = memoryview(HEAD.pack(len(data)) + data)
    while view:
        _ready(end, select.POLLOUT, deadline)
        try:
            sent = end.send(view) if isinstance(end, socket.socket) else end.write(view)
        except BlockingIOError:
            sent = None
        view = view[sent or 0 :]


def receive(end, deadline: float) -> object | None:
    """memoryd's side: the next message from end by deadline; None at the end of the stream,
    Late when the deadline passes first, ValueError for a frame too large."""
    head = _exactly(end, HEAD.size, deadline)
    if head is None:
        return None
    (size,) = HEAD.unpack(head)
    if size > MOST:
        raise ValueError(f"a frame of {size} bytes")
    data = _exactly(end, size, deadline)
    return None if data is None else msgpack.unpackb(data, raw=False)


def _exactly(end, size: int, deadline: float) -> bytes | None:
    got = bytearray()
    while len(got) < size:
        _ready(end, select.POLLIN, deadline)
        want = min(size - len(got), CHUNK)
        try:
            chunk = end.recv(want) if isinstance(end, socket.socket) else end.read(want)
        except BlockingIOError:
            chunk = None
        if chunk is None:
            continue  # woken with nothing to read yet
        if not chunk:
            return None
        got += chunk
    return bytes(got)


def _ready(end, event: int, deadline: float) -> None:
    number = end.fileno()  # ValueError on a closed file
    if number < 0:  # a closed socket
        raise OSError("the channel is closed")
    left = deadline - time.monotonic()
    if left <= 0:
        raise Late
    poller = select.poll()
    poller.register(number, event)
    if not poller.poll(left * 1000):
        raise Late
