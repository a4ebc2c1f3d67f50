"""What a client's connections learned about its model, kept for its next connections.

A recall answer labelled untrusted (or secret) puts that text into the client's conversation, and
the conversation outlives the connection: a client restarted, or one that starts memory-mcp again
to resume, keeps the text in its model's context. brokerd keeps a session's raised state in its
ledger across its own restarts; memory-mcp keeps it per client (the name it gives, and the home)
in a small file, so that a new connection of that client starts as strict as its last one ended.
Only the owner lowers it again, by removing the file with `memory-mcp trust-again --client NAME`
once the client's conversations that saw the text are gone.

The file is JSON, replaced whole (temporary file, fsync, rename, fsync of the folder), 0600 in a
0700 folder: {"class": ..., "untrusted": ..., "session": ..., "since": ...}. One that cannot be
read or parsed counts as untrusted and secret: failing safe, as brokerd's lost ledger does.
"""

import fcntl
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from proto.labels import Label, is_class, stricter

log = logging.getLogger("memory_mcp.raised")

STATE_ENV = "BOXMAKER_MCP_STATE"
MOST_BYTES = 4096


def default_folder() -> Path:
    """$BOXMAKER_MCP_STATE, else $XDG_STATE_HOME/boxmaker-memory-mcp, else ~/.local/state/..."""
    chosen = os.environ.get(STATE_ENV)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "boxmaker-memory-mcp"


def file_for(folder: Path, home: Path, client: str) -> Path:
    """client is already in the SessionId alphabet (session.client_part); the home's digest keeps
    two homes' clients apart without putting a path in a file name."""
    digest = hashlib.sha256(os.fsencode(str(home))).hexdigest()[:16]
    return folder / f"{client}-{digest}.json"


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
        value = json.loads(data)
        klass, untrusted = value["class"], value["untrusted"]
        if not is_class(klass) or not isinstance(untrusted, bool):
            raise ValueError("not a label")
        label = Label(klass=klass, untrusted=untrusted)
        return Raised(label, str(value["session"]), str(value["since"]))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        log.warning("%s: the client's kept state is damaged: counted untrusted and secret", path)
        return _unreadable()


def _unreadable() -> Raised:
    return Raised(Label(klass="secret", untrusted=True), "(unreadable)", "(unknown)")


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


def raise_kept(path: Path, label: Label, session: str) -> bool:
    """Keep the stricter of what is kept and label (whether the file changed). Two connections
    of one client raise it at once: each reads and writes under an flock of the folder, and
    neither can lower what the other kept. OSError when it cannot be written."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        known = load(path)
        wanted = stricter(known.label, label) if known is not None else label
        if known is not None and wanted == known.label:
            return False
        save(path, wanted, session)
        return True
    finally:
        os.close(folder)  # the flock goes with it


def forget(path: Path) -> bool:
    """Remove the kept state (the owner's trust-again); whether there was one."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
