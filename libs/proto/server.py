"""The server side of a socket: bind, accept, one request per connection, dispatch, reply.

Every role serves its sockets through serve_unix. The folder is made 0700 and the socket 0600; a
stale socket left by a dead process is removed, a live one is refused. A request must be whole
within request_timeout seconds. Whatever goes wrong with one request is answered with an error
message where the socket still allows it, logged as one line, and the server goes on: a handler's
ProtoError is its own clear text, anything else is "internal error" (the traceback goes to the log,
never to the peer).
"""

import asyncio
import contextlib
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable, Collection

from proto.errors import FrameError, FrameTimeout, PeerClosed, ProtoError
from proto.files import ensure_dir
from proto.frames import read_frame, write_frame
from proto.messages import Body, Error, body_of, kind_of, parse_body

REQUEST_TIMEOUT = 10.0

Handler = Callable[[Body], Awaitable[Body]]
log = logging.getLogger("proto.server")


class SocketInUse(ProtoError):
    """Another live process already serves this socket."""


def prepare_socket_path(path: str) -> None:
    """Make the folder (0700) and remove a stale socket; refuse a live one or a non-socket."""
    ensure_dir(os.path.dirname(path))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketInUse(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise SocketInUse(f"{path} is served by another live process")


async def serve_unix(
    path: str | os.PathLike,
    handler: Handler,
    kinds: Collection[str],
    *,
    name: str,
    request_timeout: float = REQUEST_TIMEOUT,
    answerable: tuple[type[Exception], ...] = (),
) -> asyncio.AbstractServer:
    """Start serving path; only message kinds in kinds reach handler.

    A handler's exception of a class in answerable (or a ProtoError) is answered with its text.
    """
    shown = (ProtoError, *answerable)
    path = os.fspath(path)
    prepare_socket_path(path)

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            reply = await _one_request(reader, handler, kinds, name, request_timeout, shown)
            if reply is not None:
                await write_frame(writer, kind_of(reply), body_of(reply))
        except (PeerClosed, ConnectionError):
            pass
        except Exception:
            log.exception("%s: failed to answer a request", name)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    old_umask = os.umask(0o177)
    try:
        server = await asyncio.start_unix_server(on_connection, path=path)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    return server


async def _one_request(
    reader: asyncio.StreamReader,
    handler: Handler,
    kinds: Collection[str],
    name: str,
    request_timeout: float,
    shown: tuple[type[Exception], ...],
) -> Body | None:
    try:
        kind, body = await read_frame(reader, timeout=request_timeout)
    except PeerClosed:
        log.info("%s: peer closed before a whole request", name)
        return None
    except FrameTimeout as e:
        log.info("%s: dropped a slow request: %s", name, e)
        return Error(text=str(e))
    except FrameError as e:
        log.info("%s: refused a frame: %s", name, e)
        return Error(text=str(e))
    if kind not in kinds:
        log.info("%s: refused kind %r", name, kind[:64])
        return Error(
            text=f"message kind {kind[:64]!r} is not served on this socket, which serves "
            f"{', '.join(sorted(kinds))}: is it the right socket? (runbook: wrong-socket)"
        )
    try:
        message = parse_body(kind, body)
        return await handler(message)
    except shown as e:
        log.info("%s: %s refused: %s", name, kind, e)
        return Error(text=str(e))
    except Exception:
        log.exception("%s: %s failed", name, kind)
        return Error(text="internal error; see the service's log")
