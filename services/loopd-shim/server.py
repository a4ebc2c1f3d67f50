"""loopd-shim serve: the control socket on uvloop, wired to memoryd and brokerd-shim.

The system prompt is checked once at start (a broken one stops the service rather than every
session), and read again for each new session so an owner's edit reaches the next one.

serve holds a lock on {home} (the file LOCK_NAME in it) for its whole life, taken before its
socket: a second loopd-shim on the same home, so the same sessions/, is refused, where it would
append to the same logs. The lock is a file of its own: memoryd locks the home folder itself when
it shares the home, and bxctl the sessions folder while it lays sessions. (In the containers
{home} is the container's own; there the shared control socket's probe refuses a second one.)
"""

import asyncio
import logging
import os
import signal

import uvloop

from loopd_shim.broker import BrokerClient
from loopd_shim.config import Config, read_system_prompt
from loopd_shim.errors import LoopdError, StartFailed
from loopd_shim.memory import MemorydClient
from loopd_shim.opensessions import OpenSessions
from loopd_shim.service import CONTROL_KINDS, LoopService
from loopd_shim.sessionfolder import clear_leftovers
from loopd_shim.sessions import SessionStore
from proto import homelock
from proto.bytebudget import ByteBudget
from proto.errors import ProtoError
from proto.files import ensure_dir
from proto.server import serve_unix
from proto.socketfile import remember, remove_own

log = logging.getLogger("loopd_shim.server")
LOCK_NAME = "loopd-shim.lock"
# What the control socket's connections may hold together stays under the shim's 256 MiB
# (compose.yaml): a turn keeps about 2 MiB of results (replyroom) and one result arriving, and a
# reply waiting for a peer that does not read it holds its frame (up to 1 MiB, and the reply
# itself) for the reply deadline: about 5 MiB a connection at worst, 160 MiB for 32. Requests
# still arriving hold at most twice CONTROL_REQUESTS. The driver's sessions take one each only
# while a message is answered.
CONTROL_CONNECTIONS = 32
CONTROL_REQUESTS = ByteBudget(16 * 1024 * 1024)
# A connection that sends no whole request in this long (a peer that connects and stays idle) is
# answered that its request did not arrive in time and closed, so idle peers hold the connections
# for seconds at most; the driver sends its request at once.
CONTROL_REQUEST_SECONDS = 10.0
# Connections past the cap answered at once with one line (proto.busy: "loopd-shim control is
# busy: 32 connections open, its cap; ...") rather than left in the listen queue, where the
# driver would wait unanswered; past these too, connections wait in the queue.
CONTROL_BUSY_SLOTS = 8


def build_service(config: Config) -> LoopService:
    read_system_prompt(config.system_prompt)
    for folder in (config.home, config.sessions):
        try:
            ensure_dir(folder)
        except OSError as e:
            # ensure_dir's chmod names no file (filename None): the folder it was making is it.
            raise StartFailed(f"cannot prepare {e.filename or folder}: {e.strerror or e}") from None
    return LoopService(
        SessionStore(config.sessions),
        config.system_prompt,
        memory=MemorydClient(config.memory_socket),
        broker=BrokerClient(config.broker_socket, config.broker_timeout),
        open_sessions=OpenSessions(config.max_open_sessions, config.session_idle_minutes),
    )


def lock_sessions(config: Config) -> int:
    """The descriptor holding the home's lock; StartFailed when another loopd-shim holds it."""
    try:
        return homelock.hold(config.home / LOCK_NAME, "loopd-shim", folder=False)
    except ProtoError as e:
        raise StartFailed(str(e)) from None


async def serve(config: Config, stop: asyncio.Event) -> None:
    """Serve the control socket until stop is set."""
    service = build_service(config)
    lock = lock_sessions(config)
    try:
        await _serve_locked(config, service, stop)
    finally:
        os.close(lock)


async def _serve_locked(config: Config, service: LoopService, stop: asyncio.Event) -> None:
    try:
        server = await serve_unix(
            config.control_socket,
            service.handle,
            CONTROL_KINDS,
            name="loopd-shim control",
            answerable=(LoopdError,),
            max_connections=CONTROL_CONNECTIONS,
            busy_slots=CONTROL_BUSY_SLOTS,
            request_timeout=CONTROL_REQUEST_SECONDS,
            request_budget=CONTROL_REQUESTS,
        )
    except OSError as e:  # a NotRegular (a link, not a folder) says its own path
        reason = str(e) if isinstance(e, ProtoError) else (e.strerror or str(e))
        raise StartFailed(f"cannot listen on {config.control_socket}: {reason}") from None
    own = remember(os.fspath(config.control_socket))
    # Now that no other loopd-shim serves this sessions/ (the lock, then the socket's probe) and
    # before any request is read (no await in between), no start is running.
    try:
        clear_leftovers(config.sessions)
    except OSError as e:  # what cannot be removed now, the next start tries again
        log.warning("%s: cannot remove the leftovers of starts: %s", config.sessions, e)
    log.info(
        "loopd-shim: serving %s (memoryd %s, brokerd %s, home %s)",
        config.control_socket,
        config.memory_socket,
        config.broker_socket,
        config.home,
    )
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()
        if own is not None:
            remove_own(own)
        log.info("loopd-shim: stopped")


async def _serve_until_signalled(config: Config) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await serve(config, stop)


def run(config: Config) -> None:
    """Serve until SIGTERM or SIGINT (the main thread's entry point)."""
    uvloop.run(_serve_until_signalled(config))
