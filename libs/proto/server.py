"""The server side of a socket: bind, accept, one request per connection, dispatch, reply.

Every role serves its sockets through serve_unix. A missing folder is made 0700 (an existing one
is left as it is) and the socket 0600; a stale socket left by a dead process (its probe refused)
is removed, a live one is refused, and so is one whose probe cannot tell (a full queue).

A socket holds at most max_connections open at once. At the cap it stops accepting: one more
connection waits in the kernel's listen queue (LISTEN_BACKLOG long; past that the kernel refuses
it, EAGAIN) without a descriptor or a wake-up of this process, and is accepted when a connection
of that socket ends. So a peer flooding one socket cannot take the descriptors or the time another
socket needs (the caller keeps the sum of its sockets' caps under the process's descriptor limit,
see proto.fdbudget). Connections are accepted by this module's own loop, so an out-of-descriptors
accept only pauses that socket briefly. A socket served with busy_slots accepts that many more
connections past its cap, each answered at once with a one-line busy refusal (proto.busy), so
that a peer asking whether the server lives is answered while every connection is at work; past
those slots too, connections wait in the listen queue as above.

What one connection may cost is bounded too: the request must be whole within request_timeout
seconds (a slow sender is cut), the reply must be taken by the peer within reply_timeout seconds
(a peer that never reads is cut), and a reply is never larger than MAX_FRAME (proto.answer).
What all connections together may hold of requests still arriving is bounded too: every socket of
the process takes a request's announced length from one budget (proto.bytebudget.REQUESTS).
"""

import asyncio
import contextlib
import errno
import logging
import os
import socket
import stat
import time
from collections.abc import Collection

from proto import peer
from proto.answer import Handler, Throttle, answer, send_reply
from proto.busy import answer_busy, busy_text
from proto.bytebudget import READ_CHUNK, REQUESTS, ByteBudget, bounded_stream
from proto.errors import ProtoError
from proto.files import ensure_dir

REQUEST_TIMEOUT = 10.0
REPLY_TIMEOUT = 10.0
MAX_CONNECTIONS = 256
LISTEN_BACKLOG = 1024
ACCEPT_BATCH = 64
ACCEPT_PAUSE = 0.05  # after an accept failed for want of descriptors
CAP_LOG_INTERVAL = 10.0
PROBE_TIMEOUT = 1.0
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}

log = logging.getLogger("proto.server")

__all__ = ["Handler", "SocketInUse", "UnixServer", "prepare_socket_path", "serve_unix"]


class SocketInUse(ProtoError):
    """Another live process already serves this socket."""


def prepare_socket_path(path: str) -> None:
    """Make the folder (0700) if missing and remove a stale socket; refuse a live one or a
    non-socket. Stale means refused (ECONNREFUSED): a socket whose probe fails otherwise (a
    full listen queue, a timeout) is refused, never removed. A folder that exists keeps its
    mode: the socket may be configured into a shared folder (/tmp, /run) that is not the role's
    to chmod; the socket itself is 0600."""
    ensure_dir(os.path.dirname(path), tighten=False)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketInUse(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(PROBE_TIMEOUT)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        # Nobody listens: a dead server's leftover. Removed only if it is still that socket.
        with contextlib.suppress(FileNotFoundError):
            now = os.lstat(path)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(path)
        return
    except FileNotFoundError:
        return  # removed meanwhile
    except OSError as e:
        # A full listen queue (EAGAIN), no answer in time or any other failure: a live server
        # may be behind it, too busy to take one more connection. Never taken for a dead one.
        why = "no answer in time" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise SocketInUse(
            f"{path} did not answer a probe ({why}): a live process may serve it with its queue"
            " full; if no process serves it, remove it"
        ) from None
    finally:
        probe.close()
    raise SocketInUse(f"{path} is served by another live process")


class UnixServer:
    """One listening socket: accepts up to the cap, serves each connection in its own task."""

    def __init__(
        self,
        sock: socket.socket,
        name: str,
        serve_one,
        max_connections: int,
        busy_slots: int = 0,
        busy_seconds: float = REQUEST_TIMEOUT,
    ):
        self._sock = sock
        self.name = name
        self._serve_one = serve_one
        self.max_connections = max_connections
        self._busy_slots = busy_slots
        self._busy_seconds = busy_seconds
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task] = set()
        self._waiting: set[asyncio.Task] = set()  # still reading their request
        self._busy: set[asyncio.Task] = set()  # over the cap, being answered busy
        self._cap_logged = -CAP_LOG_INTERVAL
        self._closed = False
        self._accepting = True
        self._chunk = bytearray(READ_CHUNK)  # every connection's reads go through it in turn
        self._loop.add_reader(sock.fileno(), self._accept)

    @property
    def open_connections(self) -> int:
        return len(self._tasks)

    def _room(self) -> bool:
        """Whether one more connection is taken now: within the cap, or into a busy slot."""
        return len(self._tasks) < self.max_connections or len(self._busy) < self._busy_slots

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            if not self._room():
                self._stop_accepting()
                return
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno == errno.ECONNABORTED:
                    continue
                if e.errno in _OUT_OF_RESOURCES:
                    log.warning("%s: cannot accept: %s; pausing briefly", self.name, e.strerror)
                    self._stop_accepting()
                    self._loop.call_later(ACCEPT_PAUSE, self._resume)
                    return
                raise
            conn.setblocking(False)
            if len(self._tasks) >= self.max_connections:
                self._answer_busy(conn)
                continue
            task = self._loop.create_task(self._run(conn))
            self._tasks.add(task)
            self._waiting.add(task)
            task.add_done_callback(self._finished)

    def _answer_busy(self, conn: socket.socket) -> None:
        text = busy_text(self.name, self.max_connections)
        task = self._loop.create_task(answer_busy(conn, text, self._busy_seconds))
        self._busy.add(task)
        task.add_done_callback(self._busy_done)
        now = time.monotonic()
        if now - self._cap_logged >= CAP_LOG_INTERVAL:
            log.warning(
                "%s: %d connections open, the cap; new ones are answered busy",
                self.name,
                len(self._tasks),
            )
            self._cap_logged = now

    def _busy_done(self, task: asyncio.Task) -> None:
        self._busy.discard(task)
        self._resume()

    def _stop_accepting(self) -> None:
        """At the cap: new connections wait in the listen queue (then are refused by the kernel,
        EAGAIN), costing this process nothing, until a connection of this socket ends."""
        if self._accepting:
            self._loop.remove_reader(self._sock.fileno())
            self._accepting = False
            now = time.monotonic()
            if len(self._tasks) >= self.max_connections and (
                now - self._cap_logged >= CAP_LOG_INTERVAL
            ):
                log.warning(
                    "%s: %d connections open, the cap; new ones wait in the listen queue",
                    self.name,
                    len(self._tasks),
                )
                self._cap_logged = now

    def _resume(self) -> None:
        if not self._accepting and not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._accept)
            self._accepting = True

    def _finished(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if self._room():
            self._resume()

    async def _run(self, conn: socket.socket) -> None:
        task = asyncio.current_task()
        try:
            reader, protocol = bounded_stream(self._chunk)
            transport, _ = await self._loop.connect_accepted_socket(lambda: protocol, sock=conn)
        except OSError:
            conn.close()
            return
        writer = asyncio.StreamWriter(transport, protocol.stream, reader, self._loop)
        try:
            await self._serve_one(reader, writer, lambda: self._waiting.discard(task))
        except Exception:
            log.exception("%s: failed to answer a request", self.name)
        finally:
            self._waiting.discard(task)
            # A loop closed with this handler still pending (a stop that did not wait for it)
            # runs this at garbage collection: the socket is closed with the object then.
            if not self._loop.is_closed():
                transport.abort()

    def close(self) -> None:
        """Stop accepting and drop the connections still waiting for their request; those being
        answered finish (wait_closed waits for them)."""
        if self._closed:
            return
        self._closed = True
        if self._accepting:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(self._sock.fileno())
            self._accepting = False
        self._sock.close()
        for task in (*self._waiting, *self._busy):
            task.cancel()

    def is_serving(self) -> bool:
        return not self._closed

    async def wait_closed(self) -> None:
        if self._tasks or self._busy:
            await asyncio.gather(*self._tasks, *self._busy, return_exceptions=True)


async def serve_unix(
    path: str | os.PathLike,
    handler: Handler,
    kinds: Collection[str],
    *,
    name: str,
    request_timeout: float = REQUEST_TIMEOUT,
    reply_timeout: float = REPLY_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    busy_slots: int = 0,
    answerable: tuple[type[Exception], ...] = (),
    request_budget: ByteBudget = REQUESTS,
) -> UnixServer:
    """Start serving path; only message kinds in kinds reach handler.

    With busy_slots, up to that many connections past max_connections are answered at once with
    a busy refusal (each for at most request_timeout seconds) rather than left in the queue.

    A handler's exception of a class in answerable (or a ProtoError) is answered with its text.
    Requests being received are held in request_budget, by default the one every socket of the
    process shares.
    """
    shown: tuple[type[Exception], ...] = (ProtoError, *answerable)
    path = os.fspath(path)
    prepare_socket_path(path)

    throttle = Throttle()

    async def serve_one(reader, writer, request_read) -> None:
        peer.hold(peer.probe_of(writer.get_extra_info("socket")))  # this connection's task only
        reply = await answer(
            reader,
            handler,
            kinds,
            name,
            request_timeout,
            shown,
            request_read,
            throttle,
            budget=request_budget,
        )
        if reply is not None:
            await send_reply(writer, reply, name, reply_timeout, throttle)

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old_umask = os.umask(0o177)
        try:
            sock.bind(path)
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
        return UnixServer(
            sock,
            name,
            serve_one,
            max_connections,
            busy_slots=busy_slots,
            busy_seconds=request_timeout,
        )
    except BaseException:
        sock.close()
        raise
