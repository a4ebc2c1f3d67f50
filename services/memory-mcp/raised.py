"""What a client's connections learned about its model, kept for its next connections.

A recall answer labelled untrusted (or secret) puts that text into the client's conversation, and
the conversation outlives the connection: a client restarted, or one that starts memory-mcp again
to resume, keeps the text in its model's context. brokerd keeps a session's raised state in its
ledger across its own restarts; memory-mcp keeps it per client (the name it gives, and the home
however --home spells it: keptfiles.py) in small files, so that a new connection of that client
starts as strict as its last one ended.
Every registration keeps it, the untrusted one too, and a connection reads it again before each
write (Keeper.look): one client may hold both registrations config-snippet prints under its one
name, and a memory-tainted hit answered through either is in the same conversation.
Only the owner lowers it again, with `memory-mcp trust-again --client NAME` once the client's
conversations that saw the text are gone: the file then holds a clean record (CLEAN), not nothing,
since a client with no file at all is one whose file may have been lost, and memoryd's recall log
is read for it (startstate.py).

The file is JSON, replaced whole (temporary file, fsync, rename, fsync of the folder), 0600 in a
0700 folder: {"class": ..., "untrusted": ..., "session": ..., "since": ...}. One that cannot be
read or parsed counts as untrusted and secret: failing safe, as brokerd's lost ledger does.

Keeping fails safe too (Keeper, which server.py waits on before it hands over an answer that
raises the state): the state is kept before the text that raised it reaches the client, and when
it cannot be (a full disk, a folder that cannot be written, a lock another process holds for
longer than --timeout) the text is withheld, since a client restarted would otherwise start as
declared holding it. The state folder is shared by every client's memory-mcp, so its lock is never
waited for on the event loop: the keeping runs in one thread per connection, the lock is tried
until a deadline (never a blocking flock), and the wait for the thread is bounded in time; a
thread still stalled in an fsync is not doubled, the next answer that needs keeping is withheld
at once.
"""

import contextlib
import errno
import fcntl
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_mcp.keptfiles import KeptFiles, as_kept, kept_files
from proto import jsonread
from proto.labels import Label, is_class, stricter

log = logging.getLogger("memory_mcp.raised")

STATE_ENV = "BOXMAKER_MCP_STATE"
MOST_BYTES = 4096
WORST = Label(klass="secret", untrusted=True)
UNKEPT = "(none: the folder cannot keep it)"
# A clean record: the lowest label, so that it raises no registration of the client, and why.
CLEAN = Label(klass="public", untrusted=False)
TRUSTED_AGAIN = "(none: trusted again by the owner)"
NONE_SEEN = "(none: memoryd's recall log shows none)"
LOCK_POLL = 0.05  # how often a held lock of the folder is tried again


def default_folder() -> Path:
    """$BOXMAKER_MCP_STATE, else $XDG_STATE_HOME/boxmaker-memory-mcp, else ~/.local/state/..."""
    chosen = os.environ.get(STATE_ENV)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "boxmaker-memory-mcp"


def file_for(folder: Path, home: Path, client: str) -> Path:
    """The client's file named by the home's real path (keptfiles.py names all its files)."""
    return kept_files(folder, home, client).primary


@dataclass(frozen=True)
class Raised:
    label: Label
    session: str
    since: str


def load(path: Path) -> Raised | None:
    """The state kept for this client, None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        log.warning("%s: cannot read the client's kept state (%s): counted untrusted", path, e)
        return _unreadable()
    try:
        data = os.read(fd, MOST_BYTES + 1)
    except OSError as e:
        log.warning("%s: cannot read the client's kept state (%s): counted untrusted", path, e)
        return _unreadable()
    finally:
        os.close(fd)
    try:
        if len(data) > MOST_BYTES:
            raise ValueError("too long")
        value = jsonread.loads(data)  # NotJson, a ValueError, for any damage, however deep
        klass, untrusted = value["class"], value["untrusted"]
        if not is_class(klass) or not isinstance(untrusted, bool):
            raise ValueError("not a label")
        label = Label(klass=klass, untrusted=untrusted)
        return Raised(label, str(value["session"]), str(value["since"]))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        log.warning("%s: the client's kept state is damaged: counted untrusted and secret", path)
        return _unreadable()


def load_all(paths: Sequence[Path]) -> Raised | None:
    """The stricter of the states kept in paths (one home's names, keptfiles.py); None: none."""
    found = None
    for path in paths:
        one = load(path)
        if one is not None and (found is None or stricter(found.label, one.label) != found.label):
            found = one
    return found


def _unreadable() -> Raised:
    return Raised(WORST, "(unreadable)", "(unknown)")


def unkeepable(path: Path, declared: Label) -> Raised | None:
    """The state of a connection whose raising could not be kept for its next one: a folder that
    cannot hold the file (full, not writable) counts as raised, untrusted and secret, as a file
    that cannot be read does; None when it can, or when the client is declared so already. A
    small file is written and removed to find out (no fsync: this runs as the session starts)."""
    if not past(declared, WORST):
        return None
    made = not path.parent.exists()  # removed again: a session that raises nothing keeps nothing
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(prefix=f".{path.name}.", dir=path.parent) as probe:
            probe.write(b" " * 256)  # about what a kept state takes
            probe.flush()
    except OSError as e:
        log.warning(
            "%s cannot keep a client's raised state (%s), so this connection starts secret and "
            "untrusted: what it reads could not be remembered for its next one; free or fix the "
            "folder (or set $%s)",
            path.parent,
            e.strerror or e,
            STATE_ENV,
        )
        return Raised(WORST, UNKEPT, "(now)")
    if made:
        with contextlib.suppress(OSError):  # another connection may have kept a state there since
            path.parent.rmdir()
    return None


def save(path: Path, label: Label, session: str) -> None:
    """Replace the kept state whole; OSError when it cannot be written (the caller logs it)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    data = json.dumps(
        {"class": label.klass, "untrusted": label.untrusted, "session": session, "since": since}
    ).encode()
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(temp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        Path(temp).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def raise_kept(
    paths: Path | Sequence[Path], label: Label, session: str, deadline: float | None = None
) -> bool:
    """Keep the stricter of what is kept and label in each of paths (one home's names, one
    folder); whether a file changed. Two connections of one client raise it at once: each reads
    and writes under an flock of the folder, and neither can lower what the other kept. OSError
    when it cannot be written, or when the lock is not had by deadline (time.monotonic());
    without a deadline the lock is waited for."""
    paths = (paths,) if isinstance(paths, Path) else tuple(paths)
    paths[0].parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with held(paths[0].parent, deadline):
        return raise_locked(paths, label, session)


@contextlib.contextmanager
def held(folder: Path, deadline: float | None) -> Iterator[None]:
    """The flock of the kept states' folder, had by deadline (see raise_kept), for the block."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _lock(fd, deadline)
        yield
    finally:
        os.close(fd)  # the flock goes with it


def raise_locked(paths: Sequence[Path], label: Label, session: str) -> bool:
    """raise_kept's work, the folder's flock held (held)."""
    changed = False
    for path in paths:
        known = load(path)
        wanted = stricter(known.label, label) if known is not None else label
        if known is None or wanted != known.label:
            save(path, wanted, session)
            changed = True
    return changed


def _lock(folder: int, deadline: float | None) -> None:
    if deadline is None:
        fcntl.flock(folder, fcntl.LOCK_EX)
        return
    while True:
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise OSError(
                    errno.EWOULDBLOCK, "its lock is held by another process (another memory-mcp)"
                ) from None
            time.sleep(LOCK_POLL)


def past(declared: Label, label: Label) -> bool:
    """Whether label is stricter than the owner declared for the client (a class raised only to
    private is every session's after its first call: not kept)."""
    untrusted = label.untrusted and not declared.untrusted
    return untrusted or (label.klass == "secret" and declared.klass != "secret")


def to_keep(declared: Label, label: Label) -> bool:
    """Whether an answer labelled label is kept for the client: past what the owner declared, or
    untrusted whatever was declared. One client may hold both registrations config-snippet prints
    under its one name, and its model reads what either answers: a memory-tainted hit answered
    through the untrusted one must reach the trusted one's writes (Keeper.look)."""
    return label.untrusted or past(declared, label)


def withheld_text(label: Label, kept: Path | None, why: str, written: bool) -> str:
    held = "untrusted" if label.untrusted else "secret"
    done = " (the write itself was made: `bxctl memory log` shows it)" if written else ""
    return (
        f"memory-mcp withheld memoryd's answer{done}: it holds {held} memory, and this "
        f"client's raised state cannot be kept in {kept} ({why}), so its other and next "
        "connections would go on as registered; free or fix that folder (or set "
        "$BOXMAKER_MCP_STATE) and ask again"
    )


class Keeper:
    """One connection's keeping of its raised state: off the event loop, bounded by timeout, at
    most one thread at a time."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._running = False  # a thread still keeping (perhaps stalled in an fsync)
        self._looking = False  # a thread still reading the kept state again (look)
        self._turns: Any = None  # an anyio.Lock, made once an event loop runs
        self.waiting = 0  # answers waiting to be kept: work under way (stdio's busy)

    async def keep(self, kept: KeptFiles | Path, label: Label, session: str) -> str | None:
        """None once label is kept; else why it is not. Answers that need keeping at once take
        turns, all within the one bound. The file is read at every such answer, not skipped once
        this connection kept label: the owner's trust-again may have lowered it since, and a
        tainted hit after it must raise it again (raise_kept writes only when it is lower)."""
        import anyio.to_thread  # the SDK's; the owner's commands (trust-again) run without it

        self._turns = self._turns or anyio.Lock()
        kept = as_kept(kept)
        self.waiting += 1
        try:
            with anyio.move_on_after(self.timeout + 1.0):
                async with self._turns:
                    return await self._keep(kept, label, session)
        finally:
            self.waiting -= 1
        # only the bound ends the block without a return
        return f"{kept.folder} did not answer in {self.timeout:g} seconds"

    async def _keep(self, kept: KeptFiles, label: Label, session: str) -> str | None:
        import anyio.to_thread

        if self._running:
            return f"an earlier write of {kept.folder} has not ended after {self.timeout:g} seconds"
        self._running = True
        deadline = time.monotonic() + self.timeout

        def work() -> bool:
            try:
                return raise_kept(kept.names, label, session, deadline)
            finally:
                self._running = False

        try:
            await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except OSError as e:
            return e.strerror or str(e)
        return None

    async def look(self, kept: KeptFiles | Path) -> Raised | None:
        """The kept state read again, before a write: another connection of the client (its other
        registration) may have raised it since this one began. Off the event loop and within the
        one bound; a read that does not end by then counts as unreadable, as does one asked while
        the last is still stalled."""
        import anyio.to_thread

        kept = as_kept(kept)
        if self._looking:
            return self._unread(kept.primary, "an earlier read of it has not ended")
        self._looking = True

        def work() -> Raised | None:
            try:
                return load_all(kept.names)
            finally:
                self._looking = False

        self.waiting += 1
        try:
            with anyio.move_on_after(self.timeout):
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        finally:
            self.waiting -= 1
        return self._unread(kept.primary, f"it did not answer in {self.timeout:g} seconds")

    def _unread(self, path: Path, why: str) -> Raised:
        log.warning("%s: cannot read the client's kept state (%s): counted untrusted", path, why)
        return _unreadable()


def forget(kept: KeptFiles | Path, deadline: float | None = None) -> bool:
    """The owner's trust-again: the kept state replaced by a clean record in each of the home's
    names, under the folder's lock (a file removed would send the next connection to the recall
    log, which still shows the text that raised it), and an earlier version's file for the
    spelling given removed; whether a raised state was kept. OSError as raise_kept's."""
    kept = as_kept(kept)
    kept.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with held(kept.folder, deadline):
        known = load_all(kept.names + kept.legacy)
        for path in kept.names:
            save(path, CLEAN, TRUSTED_AGAIN)
        for path in kept.legacy:
            path.unlink(missing_ok=True)
    return known is not None and known.label != CLEAN
