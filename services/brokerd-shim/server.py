"""Running brokerd-shim: build the broker from the config, serve its socket, stop on a signal.

start() prepares {home} (ledger/, audit/, grants/ at 0700), locks ledger/ for the process's life
(so a second brokerd-shim on the same home is refused before it reads or serves anything: two
would each have a writer over one ledger and one audit log), builds the broker and serves
tool_request on the broker socket through proto's serve_unix. serve() runs until SIGTERM or SIGINT,
then closes the server, lets the writer thread finish what it holds, and removes the socket. Tests
call start() inside their own event loop.
"""

import asyncio
import logging
import os
import signal
from dataclasses import dataclass

from brokerd_shim.audit import AuditLog, sessions_answered
from brokerd_shim.config import Config
from brokerd_shim.errors import BrokerError, StartFailed
from brokerd_shim.fixtures import FixtureRuntime
from brokerd_shim.grants import GrantsWatcher
from brokerd_shim.ledger import Ledger
from brokerd_shim.memory_runtime import MemoryRuntime
from brokerd_shim.runtime import CompositeRuntime, Runtime
from brokerd_shim.service import Broker
from proto import homelock
from proto.errors import ProtoError
from proto.files import ensure_dir
from proto.server import UnixServer, serve_unix
from proto.socketfile import Bound, remember, remove_own

log = logging.getLogger("brokerd_shim")

KINDS = frozenset({"tool_request"})


@dataclass
class Running:
    broker: Broker
    server: UnixServer
    socket: str
    own: Bound | None  # the socket as bound: only that is removed at the stop
    lock: int  # the descriptor holding ledger/'s lock, closed last

    async def stop(self) -> None:
        self.server.close()
        await self.server.wait_closed()
        await asyncio.to_thread(self.broker.close)
        own = self.own
        if own is not None:
            remove_own(own)
        os.close(self.lock)
        log.info("stopped; %s removed", self.socket)


def lock_home(config: Config) -> int:
    """Make {home} and ledger/ (0700) if missing and lock ledger/, brokerd-shim's alone (in the
    containers too, where {home} itself is the container's own); the descriptor holding it."""
    folder = config.home
    try:
        for folder in (config.home, config.ledger_dir):
            ensure_dir(folder)
    except OSError as e:
        raise StartFailed(f"cannot prepare {e.filename or folder}: {e.strerror or e}") from None
    try:
        return homelock.hold(config.ledger_dir, "brokerd-shim", folder=True)
    except ProtoError as e:
        raise StartFailed(str(e)) from None


def build_broker(config: Config, runtime: Runtime | None = None) -> Broker:
    """The broker of a config; runtime replaces the composite (memoryd + fixtures) in tests."""
    folder = config.home
    try:
        for folder in (config.home, config.ledger_dir, config.audit_dir):
            ensure_dir(folder)
        # proto's serve_unix makes only the socket's own folder 0700; its parents get the umask.
        folder = config.broker_socket.parent.parent
        if folder == config.home / "run":
            ensure_dir(folder)
        folder = config.grants_dir
        if not folder.exists():
            ensure_dir(folder)
    except OSError as e:
        # ensure_dir's chmod names no file (filename None): the folder it was making is it.
        raise StartFailed(f"cannot prepare {e.filename or folder}: {e.strerror or e}") from None
    if runtime is None:
        runtime = CompositeRuntime(
            MemoryRuntime(config.memory_socket, config.memory_timeout),
            FixtureRuntime(config.fixtures_dir),
        )
    grants = GrantsWatcher(config.grants_dir)
    ledger = Ledger(
        config.ledger_dir, answered=sessions_answered(config.audit_dir), audit=config.audit_dir
    )
    return Broker(grants, ledger, AuditLog(config.audit_dir), runtime)


async def start(config: Config, runtime: Runtime | None = None) -> Running:
    lock = await asyncio.to_thread(lock_home, config)
    try:
        return await _start_locked(config, runtime, lock)
    except BaseException:
        os.close(lock)  # a start refused leaves the home free for the next try
        raise


async def _start_locked(config: Config, runtime: Runtime | None, lock: int) -> Running:
    # It reads the whole audit log once (sessions_answered): off the event loop, as every file.
    broker = await asyncio.to_thread(build_broker, config, runtime)
    path = os.fspath(config.broker_socket)
    try:
        server = await serve_unix(
            path, broker.handle, KINDS, name="brokerd-shim", answerable=(BrokerError,)
        )
    except ProtoError as e:
        broker.close()
        raise StartFailed(str(e)) from None
    except OSError as e:
        broker.close()
        # Some have no strerror (a path too long for a socket): then the text is the reason.
        raise StartFailed(f"cannot serve {path}: {e.strerror or e}") from None
    log.info("serving %s (home %s, memoryd at %s)", path, config.home, config.memory_socket)
    await broker.current_grants()
    return Running(broker, server, path, remember(os.fspath(path)), lock)


async def serve(config: Config) -> None:
    """Serve until SIGTERM or SIGINT. The handlers come first: a signal while it starts (its
    socket already made) stops it cleanly once started, as loopd-shim does, never by the
    signal's default action."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    running = await start(config)
    try:
        await stop.wait()
    finally:
        await running.stop()
