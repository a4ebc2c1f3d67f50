"""memoryd's start and run: make what is missing, open the index, then serve three sockets (spec 7)
until SIGTERM or SIGINT, catching up every log in the background meanwhile.

A start that cannot succeed raises StartFailed; the CLI turns it into one line naming the cause
and the runbook entry memoryd-start-failed, and a non-zero exit.
"""

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import sqlite3

from memoryd.config import Config, Limits
from memoryd.data import backup, lay, notesswap
from memoryd.errors import MemorydError, StartFailed
from memoryd.home import Home, NotRegular, ensure_dir, unsafe_entry
from memoryd.index.index import Index, check_fts5
from memoryd.journal import forgetread, forgottenwrite, heldids
from memoryd.memory import leftover
from memoryd.memory.store import MemoryStore
from memoryd.owncopy import give_own_copies
from memoryd.service import ADMIN_KINDS, BROKER_KINDS, LOOP_KINDS, MemoryService
from memoryd.trust.witness import Witness
from proto import fdbudget
from proto.errors import ProtoError
from proto.server import serve_unix
from proto.socketfile import Bound, remember, remove_own

log = logging.getLogger("memoryd")
LOCK_NAME = "memoryd.lock"
# Connections past the owner socket's cap answered at once with a busy refusal: bxctl's probe
# while it waits on a long command (and a health check) must be answered however few connections
# the descriptor limit leaves the owner socket, not wait behind that command. Two, so that two
# long commands' probes at once do not wait on each other.
OWNER_BUSY_SLOTS = 2


def prepare(config: Config) -> MemoryService:
    """Everything before listening: folders, files, FTS5, the index opened (the catch-up of the
    logs runs once the sockets listen: MemoryService.start_catch_up)."""
    home = config.home
    try:
        if home.root.is_symlink() and home.root.is_dir():
            log.info("%s: a symbolic link to %s, used as the home", home.root, home.root.resolve())
        else:
            ensure_dir(home.root)
    except OSError as e:
        raise StartFailed(f"cannot create {e.filename or home.root}: {e.strerror}") from None
    locks = [lock_home_folder(home)]
    try:
        service = _prepare_locked(config, locks)
    except BaseException:
        for fd in locks:  # a start refused leaves the home free for the next try
            os.close(fd)
        raise
    service.home_lock = tuple(locks)
    return service


def _prepare_locked(config: Config, locks: list[int]) -> MemoryService:
    home = config.home
    refused = unsafe_entry(home, links=False)
    if refused is None:  # every folder and file is what it should be: nothing is followed
        give_own_copies(home)
        refused = unsafe_entry(home)
    if isinstance(refused, NotRegular):
        raise StartFailed(f"{refused}; memoryd uses only its own files and folders in its home")
    if refused is not None:
        raise StartFailed(f"cannot look at {refused.filename}: {refused.strerror}")
    for folder in (home.memory, home.index_dir, home.run):
        try:
            ensure_dir(folder)
        except NotRegular as e:  # run/ left as a file: unsafe_entry does not look at run/
            said = f"{e}; memoryd uses only its own files and folders in its home"
            raise StartFailed(said) from None
        except OSError as e:
            raise StartFailed(f"cannot create {e.filename or folder}: {e.strerror}") from None
    locks.append(take_index_lock(home))
    lay.recover(home)  # a restore killed after its point of no return is finished now
    remove_stale_temp_files(home)
    check_fts5()
    store = MemoryStore(
        home,
        soul_starter=config.soul_starter,
        review=config.review,
        max_class=config.max_class,
    )
    store.ensure()
    # The journal's forget lines, read from their saved reading on (only what was appended since)
    forgetread.keep_saved(home)
    # and the ids its lines hold (show, undo, log and the next id ask them), the same way
    heldids.keep_saved(home)
    forgottenwrite.mend(home)  # a damaged or missing forgotten.jsonl gets the journal's keys back
    index = Index(
        home,
        max_class=config.max_class,
        max_record_bytes=config.max_record_bytes,
        mode=config.recall_mode,
    )
    try:
        # A changed recall mode's tables are built once the sockets listen (start_catch_up).
        index.open(defer_mode=True)
    except (OSError, sqlite3.Error) as e:
        raise StartFailed(f"cannot open the index {home.index_db}: {e}") from None
    # Listed now, so that a recall from the first moment says how many logs are left to read.
    # sessions/ is loopd's, read only to index: one memoryd cannot list (its mode, its owner
    # after a copy) stops nothing. It is said once, the index serves what it holds, and the
    # catch-up lists it again until it can (listagain.py).
    sessions = index.listed()
    index.catching_up = (0, len(sessions or ()))
    # The witness is the service's: it reads session logs off the writer thread (service.py).
    service = MemoryService(
        store, index, write_deadline=config.write_deadline, witness=Witness(home)
    )
    service.to_catch_up = sessions
    return service


def lock_home_folder(home: Home) -> int:
    """Hold an exclusive lock on the home folder itself for the process's life, taken before
    memoryd makes or mends anything in it, so that two memoryd never write one home (the second
    would race the first's writes, and its start-up recovery would take the first one's write in
    flight for a crash's). index/memoryd.lock alone was lost when the owner removed index/."""
    try:
        fd = os.open(home.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise StartFailed(f"cannot open {home.root}: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if isinstance(e, BlockingIOError):
            raise StartFailed(
                f"another memoryd is running on {home.root} (it holds its lock)"
            ) from None
        raise StartFailed(f"cannot lock {home.root}: {e.strerror}") from None
    return fd


def take_index_lock(home: Home) -> int:
    """index/memoryd.lock, which memoryd before the home folder's lock took: held too, so that
    an older memoryd started beside this one is refused as well."""
    path = home.index_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise StartFailed(f"cannot open {path}: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StartFailed(f"another memoryd is running on {home.root} ({path} is locked)") from None
    return fd


def remove_stale_temp_files(home: Home) -> None:
    """A crash between writing a temporary file and renaming it leaves the temporary file; the
    real file is whole (old or new), so the leftover is removed, and logged. Beside memory.md and
    user.md a leftover may instead be a save of the owner's that memoryd's exchange had moved
    aside when it was killed: one that holds what no other place does is kept, not removed
    (leftover.keep_if_owners, which logs it); beside notes.md, one that is neither the file its
    rewrite read nor the rewrite (notesswap.kept_leftover, which logs it)."""
    leftovers = [*home.memory.glob(".*.tmp"), *home.index_dir.glob(".shown.json.*.tmp")]
    for path in sorted(leftovers):
        try:
            if leftover.keep_if_owners(home, path) is not None:
                continue
            if notesswap.kept_leftover(path) is not None:
                continue
            path.unlink()
            log.info("%s: removed a temporary file left by a crash", path)
        except OSError as e:
            log.warning("%s: cannot remove a leftover temporary file: %s", path, e.strerror)
    # backups/ too: a killed backup's or export's temporary file, or a copy a stopped bxctl
    # handed over, holds memory's text where a forget would not reach it.
    backup.remove_all_leftovers(home)


def connection_caps(limits: Limits) -> list[int]:
    """The loopd, brokerd and owner sockets' caps, fitted under the descriptor limit (logged)."""
    wanted = {
        "loopd": limits.loop_connections,
        "brokerd": limits.broker_connections,
        "owner": limits.admin_connections,
    }
    caps, limit = fdbudget.share(wanted, reserve=fdbudget.RESERVE + OWNER_BUSY_SLOTS)
    shown = ", ".join(f"{name} {cap}" for name, cap in caps.items())
    if caps != wanted:
        log.warning(
            "descriptor limit %d is too low for the configured [limits]; connection caps cut to %s",
            limit,
            shown,
        )
    else:
        log.info("descriptor limit %d; connection caps %s", limit, shown)
    return list(caps.values())


async def run(config: Config, service: MemoryService, ready: asyncio.Event | None = None) -> None:
    """Serve until a stop signal (or until the task is cancelled)."""
    limits = config.limits
    sockets = [
        (config.loop_socket, service.on_loop, LOOP_KINDS, "memoryd loopd socket", 0),
        (config.broker_socket, service.on_broker, BROKER_KINDS, "memoryd brokerd socket", 0),
        (
            config.admin_socket,
            service.on_admin,
            ADMIN_KINDS,
            "memoryd owner socket",
            OWNER_BUSY_SLOTS,
        ),
    ]
    caps = connection_caps(limits)
    servers = []
    bound: list[Bound] = []  # only these are removed at the end, never a path merely configured
    try:
        for (path, handler, kinds, name, busy), cap in zip(sockets, caps, strict=True):
            try:
                server = await serve_unix(
                    path,
                    handler,
                    kinds,
                    name=name,
                    answerable=(MemorydError,),
                    max_connections=cap,
                    busy_slots=busy,
                    request_timeout=limits.request_seconds,
                    reply_timeout=limits.reply_seconds,
                )
            except (OSError, ProtoError) as e:
                raise StartFailed(f"cannot listen on {path}: {e}") from None
            servers.append(server)
            own = remember(os.fspath(path))
            if own is not None:
                bound.append(own)
            log.info("%s: listening", path)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        service.start_catch_up()
        if ready is not None:
            ready.set()
        await stop.wait()
        log.info("stopping")
    finally:
        for own in bound:  # first, so that no new peer finds a socket about to close
            remove_own(own)
        for server in servers:
            server.close()
        # Before the requests in flight are waited for, a reindex's build in flight is stopped
        # (its handler is then answered at once, the old index untouched), and long owner
        # commands are told to end at their next safe point with their answer of how far they
        # got (an import between two batches): the stop takes seconds, within the 10 s a
        # container's stop allows before SIGKILL, and the owner is told what was done.
        service.begin_stop()
        for server in servers:
            await server.wait_closed()
        service.close()
