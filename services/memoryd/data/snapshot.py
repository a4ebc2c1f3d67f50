"""A consistent picture of memoryd's files, taken on the writer thread between two writes.

Taking it costs one open and one fstat per file: no byte is copied while the writer waits. Every
file is held by an open descriptor with the length it had, so what is read later, off the writer,
is exactly what the files held then: memoryd appends to the journal, notes.md, the recall logs and
forgotten.jsonl (bytes past the noted length are left out) and replaces the other files by rename
(the descriptor keeps the old inode). The recall log is appended by readers too, so each
append-only file is cut back to its last whole line when it is read.

Session logs (backup --with-sessions) are not held open: a home may have more of them than the
descriptor limit allows. loopd only appends to them, so their length and identity (device, inode)
are noted instead, just before the memory files are held (note_sessions), and each is opened
again when the archive reads it, refused (OSError, naming it) if it is no longer the same file or
became shorter; nothing past the noted length is read.
"""

import errno
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import layout
from memoryd.errors import AdminRefused
from memoryd.home import Home, NotRegular, open_file

log = logging.getLogger(__name__)

APPEND_ONLY = ("notes.md", "forgotten.jsonl", "edits/", "recalls/", "sessions/")


@dataclass
class Held:
    name: str  # as in the archive: memory/notes.md
    fd: int | None  # None: not held open, opened again from path when read
    size: int
    path: Path | None = None
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) of path when noted
    data: bytes | None = None  # a file not in the home, held as memoryd's start would make it

    def chunks(self, size: int = 1 << 20):
        """The file's bytes as they were when held, in chunks."""
        if self.data is not None:
            yield from (self.data[i : i + size] for i in range(0, len(self.data), size))
            return
        if self.fd is not None:
            yield from self._read(self.fd, size)
            return
        fd = self._reopen()
        try:
            yield from self._read(fd, size)
        finally:
            os.close(fd)

    def _read(self, fd: int, size: int):
        offset = 0
        while offset < self.size:
            data = os.pread(fd, min(size, self.size - offset), offset)
            if not data:
                raise OSError(f"{self.name} became shorter while it was read")
            offset += len(data)
            yield data

    def _reopen(self) -> int:
        """A descriptor of the file noted, refused unless it is still that file, as long."""
        try:
            if self.path is None:
                raise FileNotFoundError(errno.ENOENT, "neither held nor noted")
            fd = open_file(self.path, os.O_RDONLY)
        except OSError as e:
            raise OSError(f"{self.name} cannot be read again: {e.strerror or e}") from None
        st = os.fstat(fd)
        replaced = (st.st_dev, st.st_ino) != self.identity
        if replaced or st.st_size < self.size:
            os.close(fd)
            changed = "was replaced" if replaced else "became shorter"
            raise OSError(f"{self.name} {changed} while the backup was written")
        return fd


@dataclass
class Snapshot:
    files: list[Held] = field(default_factory=list)
    waited: float = 0.0  # seconds the writer spent taking it

    def close(self) -> None:
        for held in self.files:
            if held.fd is None:
                continue
            try:
                os.close(held.fd)
            except OSError:
                pass
        self.files = []


def _whole_lines(fd: int, size: int) -> int:
    """size cut back to just after the last newline at or before it."""
    start = size
    while start > 0:
        step = min(65_536, start)
        data = os.pread(fd, step, start - step)
        cut = data.rfind(b"\n")
        if cut != -1:
            return start - step + cut + 1
        start -= step
    return 0


def _length(name: str, fd: int) -> int:
    """The length to read of the file at fd: an append-only one cut to its last whole line."""
    size = os.fstat(fd).st_size
    if any(part in name for part in APPEND_ONLY) and size:
        last = os.pread(fd, 1, size - 1)
        if last != b"\n":
            size = _whole_lines(fd, size)
    return size


def _hold(name: str, path: Path) -> Held | None:
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return Held(name, fd, _length(name, fd))
    except BaseException:
        os.close(fd)
        raise


def _note(name: str, path: Path) -> Held | None:
    """path's length and identity, its descriptor closed again (a session log)."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        return Held(name, None, _length(name, fd), path, (st.st_dev, st.st_ino))
    finally:
        os.close(fd)


def take(home: Home, missing_ok: bool = False) -> Snapshot:
    """Hold every memoryd file; run it on the writer thread. A file that cannot be opened (not
    readable by memoryd's user, not a regular file), a folder of memory's that cannot be listed
    and, unless missing_ok, a part every whole home has that is missing (layout.whole_files)
    refuses it (AdminRefused, naming it): a backup holds all an owner's backup holds, or nothing.
    missing_ok is for the copy restore --replace keeps of a home it is about to mend."""
    started = time.monotonic()
    snap = Snapshot()
    try:
        listed = layout.whole_files(home, missing_ok)
    except OSError as e:
        raise _unreadable(str(e.filename), e) from None
    _add(snap, listed)
    held = {h.name for h in snap.files}
    lacking = [f"memory/{n}" for n in layout.CORE if f"memory/{n}" not in held]
    if lacking and not missing_ok:  # gone since memoryd made it at start
        snap.close()
        raise _unreadable(lacking[0], FileNotFoundError(errno.ENOENT, "missing", lacking[0]))
    snap.waited = time.monotonic() - started
    return snap


def take_to_mend(home: Home, starter: bytes) -> Snapshot:
    """The copy restore --replace keeps of a home it is about to mend, whole: take(missing_ok),
    and a core file the home lacks (removed by hand, which is what a restore mends) held as
    memoryd's start would make it (memory/store.py: ensure): memory.md, user.md and notes.md
    empty, soul.md the starter. Restore refuses an archive without them; with them, restoring
    the copy and starting memoryd gives what starting the home it replaced would have given
    (the journal's hand edit included: the journal is the home's own, the file the empty one)."""
    snap = take(home, missing_ok=True)
    held = {h.name for h in snap.files}
    made = []
    for name in layout.CORE:
        if f"memory/{name}" in held:
            continue
        data = starter if name == "soul.md" else b""
        made.append(Held(f"memory/{name}", None, len(data), data=data))
        log.info(
            "%s: missing; the copy of the home restore --replace keeps holds it %s, as memoryd's "
            "start would make it",
            home.memory_file(name),
            "as the soul.md starter" if name == "soul.md" else "empty",
        )
    snap.files = made + snap.files
    return snap


def of_files(listed: list[tuple[str, Path]]) -> Snapshot:
    """Hold the files listed as (name in the archive, path): a restore's staged files, counted as
    a backup counts the home's."""
    snap = Snapshot()
    _add(snap, listed)
    return snap


def note_sessions(home: Home, skipped: dict[str, str] | None = None) -> list[Held]:
    """The session logs recall reads too, noted (not held open: read again when archived), each
    cut to its last whole record. Before the memory's snapshot is taken, never after: loopd logs
    a memory write's result only once memoryd applied it, so logs noted first hold no result the
    memory taken next lacks (the other way round, a write applied and not yet logged, is a state
    the home can be in). Off the writer: loopd appends them, not memoryd. A log that cannot be
    noted refuses the backup (AdminRefused, naming it), before anything is written. A log recall
    does not read (a link, a FIFO, one in a misnamed folder: layout.session_files) is not in the
    archive: skipped, when given, gets each by its folder with why, for the answer to count."""
    noted = []
    try:
        if os.path.lexists(home.sessions) and not home.sessions.is_dir():
            # a backup --with-sessions would hold none of the logs and pass for one that does
            raise NotRegular(errno.ENOTDIR, "not a folder", str(home.sessions))
        listed = (
            layout.session_files(home) if skipped is None else layout.session_files(home, skipped)
        )
        for name, path in listed:
            held = _note(name, path)
            if held is not None:
                noted.append(held)
    except OSError as e:
        reason = str(e) if isinstance(e, NotRegular) else f"{e.filename}: {e.strerror or e}"
        raise AdminRefused(
            f"refused: the backup cannot read a session log ({reason}); "
            f"no archive was left in {layout.backups(home)}"
        ) from None
    return noted


def _unreadable(name: str, e: OSError) -> AdminRefused:
    """The refusal for a file that cannot be held: one copied in by hand as another user, or
    with mode 000, or a link, is the owner's to fix, not a bug of memoryd's."""
    if isinstance(e, NotRegular):
        thing = "memoryd's folder back" if name in layout.FOLDERS else "a regular file"
        what, fix = f"is {e.strerror}", f"put {thing} there"
    elif isinstance(e, FileNotFoundError):
        # removed while memoryd ran: an archive without it would pass for a whole backup
        # Not "restore a backup": that would take every file back to the archive, not this one.
        # No redirection or pipe: bxctl shows a refusal with its markup escaped (as \>), and the
        # command must work pasted as printed. tar extracts the one member named, nothing else.
        what = "is missing"
        fix = (
            f"put it back (a backup holds it: tar -xzf ARCHIVE {name}, run in the home folder; "
            "restoring the whole backup would take all of memory back to it)"
        )
    else:
        what = f"cannot be read ({e.strerror or e})"
        fix = "give it back to memoryd's user or make it readable"
    return AdminRefused(
        f"refused: {name} {what}; nothing was written; {fix}, then try again "
        "(runbook: memory-unavailable)"
    )


def _add(snap: Snapshot, listed: list[tuple[str, Path]]) -> None:
    """Hold each file listed; one that cannot be opened refuses it all (AdminRefused, naming
    it; snap closed)."""
    name = ""
    try:
        for name, path in listed:
            held = _hold(name, path)
            if held is not None:
                snap.files.append(held)
    except OSError as e:
        snap.close()
        raise _unreadable(name, e) from None
    except BaseException:
        snap.close()
        raise
