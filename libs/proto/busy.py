"""The answer a socket gives a connection over its cap, when it is served with busy answers.

At its cap a socket stops accepting, and one more connection waits in the listen queue until a
connection ends. That is the right wait for a peer with a deadline of its own, but not for a
peer that connects to learn whether the server is alive (bxctl's probe while it waits on a long
command, a health check): with every connection taken by work that outlasts its patience, the
probe waits in the queue behind the very work it vouches for and is taken for a dead server's
silence. A socket given a few busy slots (proto.server) accepts a connection over its cap into
one of them and answers it here at once with a one-line refusal, which is proof enough that the
event loop answers; the request itself is never read, so nothing it asked is done.
"""

import asyncio
import contextlib
import socket

from proto.frames import encode_frame
from proto.messages import Error, body_of, kind_of
from proto.plural import counted

DISCARD_CHUNK = 4096


def busy_text(name: str, cap: int) -> str:
    """The refusal's one line: the socket, its cap, and that nothing was done."""
    return (
        f"{name} is busy: {counted(cap, 'connection')} open, its cap; this request was not "
        "read and nothing was done: ask again when one of them is answered"
    )


async def answer_busy(conn: socket.socket, text: str, seconds: float) -> None:
    """Send text as a refusal, then read and drop what the peer sends until it closes (at most
    seconds): closed with its request unread, the socket would reset a peer still sending, which
    would then never read the refusal waiting for it."""
    loop = asyncio.get_running_loop()
    dropped = bytearray(DISCARD_CHUNK)
    try:
        async with asyncio.timeout(seconds):
            message = Error(text=text)
            await loop.sock_sendall(conn, encode_frame(kind_of(message), body_of(message)))
            while await loop.sock_recv_into(conn, dropped):
                pass
    except (TimeoutError, OSError):
        pass  # the peer was told, or was gone: either way this connection is done
    finally:
        with contextlib.suppress(OSError):
            conn.close()
