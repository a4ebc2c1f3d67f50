"""Files between the owner's disk and memoryd's {home}/backups/, both ways.

memoryd sees only its own folders, so a file the owner names elsewhere (an archive to restore, an
export to import) is copied into backups/ for memoryd to read, and removed after (a shared lock
on backups/ held meanwhile tells memoryd it is in use); one memoryd wrote there is copied out
where the owner asked. Each copy goes to a temporary file beside its name (one without a name
where the file system allows it, so a killed bxctl leaves none), fsync'd, then linked to the name
(never over an existing file). When bxctl runs as root and memoryd as another user (rootful
containers run it as 10001), a copy handed to memoryd is made that user's: a 0600 file of root's
is one memoryd cannot open.

A file handed over is never larger than memoryd would read (an export over the import limit,
proto/backupformat.py) nor than the home's disk has room for: it is refused, naming its size and
the limit, before a byte of it is copied, and a file that grows while it is copied is stopped
there. Copied first and refused after, it would fill the home's disk meanwhile (every write
memoryd makes would meet a full disk) and the owner would be told of a full disk, not of the file.
"""

import contextlib
import errno
import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bxctl.common import EXIT_REFUSED, fail
from proto.backupformat import IMPORT_MAX
from proto.escape import escape

# The names memoryd reads a file in backups/ by (as its own check says them).
NAME = re.compile(r"\.?[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_dest(dest: Path, nothing: str) -> None:
    """Refuse before memoryd is asked when dest cannot be written (it exists, or its folder is
    missing or not writable), so that no archive or export is made for nothing. (A copy that
    fails later, on a full disk, removes nothing older: bxctl asks for that after the copy.)"""
    shown = escape(str(dest), markup=False)
    if os.path.lexists(dest):
        fail(f"{shown} exists; {nothing}", EXIT_REFUSED)
    if not dest.parent.is_dir():
        folder = escape(str(dest.parent), markup=False)
        fail(f"cannot write {shown}: {folder} is not a folder; {nothing}", EXIT_REFUSED)
    if not os.access(dest.parent, os.W_OK | os.X_OK):
        fail(f"cannot write {shown}: its folder is not writable; {nothing}", EXIT_REFUSED)
    longest = _name_max(dest.parent)
    if longest is not None and len(os.fsencode(dest.name)) > longest:
        fail(
            f"cannot write {shown}: File name too long (over {longest} bytes); {nothing}",
            EXIT_REFUSED,
        )


def _name_max(folder: Path) -> int | None:
    """The longest file name the file system of folder takes, in bytes; None when it does not
    say (the copy then says it, if the name is refused)."""
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return None
    return longest if longest > 0 else None


@dataclass(frozen=True)
class Room:
    """The most bytes a copy may hold, what sets that (said after the number) and what to do."""

    most: int
    why: str
    then: str


class TooLarge(Exception):
    """The source holds more than its room: args are the Room and its size, or None when it grew
    past the room while it was copied."""


def room_for(command: str, folder: Path) -> list[Room]:
    """The most a file handed over for command may hold: what memoryd reads of it (an import:
    said first, as no room made on the disk would help), and what is free on the disk of folder
    (memoryd takes an archive of any size, and a copy larger than the room would only fill the
    disk)."""
    rooms = []
    if command == "import":
        rooms.append(Room(IMPORT_MAX, "memoryd imports at most", " (is it an export?)"))
    with contextlib.suppress(OSError):  # not known: the copy says a full disk, if it meets one
        st = os.statvfs(folder)
        free = st.f_bavail * st.f_frsize
        rooms.append(Room(free, "free on the home's disk", "; make room there, then run it again"))
    return rooms


def _too_large(source: Path, room: Room, size: int | None) -> str:
    grown = ("it grew, while it was copied, past", "left")
    held, done = grown if size is None else (f"it is {size:,} bytes, over", "copied")
    return (
        f"{escape(str(source), markup=False)} is too large: {held} the {room.most:,} bytes "
        f"{room.why}; nothing was {done}{room.then}"
    )


class _Capped:
    """source read through, TooLarge raised once it gives more than room.most bytes."""

    def __init__(self, source, room: Room) -> None:
        self._source = source
        self._room = room
        self._left = room.most

    def read(self, size: int = -1) -> bytes:
        want = size if size is not None and size >= 0 else 1 << 20
        data = self._source.read(min(want, self._left + 1))
        self._left -= len(data)
        if self._left < 0:
            raise TooLarge(self._room, None)
        return data


def copy_new(
    source: Path,
    dest: Path,
    after: str = "",
    owner: tuple[int, int] | None = None,
    rooms: list[Room] | None = None,
) -> None:
    """Copy source to dest, 0600 (owned by owner, uid and gid, when given), atomically, never over
    an existing file, never more than rooms allow (refused before a byte is copied when source is
    larger); one line on failure, ending with after (what else the owner must know)."""
    if os.path.lexists(dest):
        fail(f"{escape(str(dest), markup=False)} exists; nothing was written{after}", EXIT_REFUSED)
    try:
        _write_new(source, dest, owner, rooms or [])
    except TooLarge as e:
        fail(_too_large(source, *e.args) + after, EXIT_REFUSED)
    except FileExistsError:
        fail(f"{escape(str(dest), markup=False)} exists; nothing was written{after}", EXIT_REFUSED)
    except OSError as e:
        fail(
            f"cannot write {escape(str(dest), markup=False)}: {e.strerror or e}; "
            f"nothing was left{after}",
            EXIT_REFUSED,
        )


def _write_new(source: Path, dest: Path, owner: tuple[int, int] | None, rooms: list[Room]) -> None:
    """The copy made as a file without a name in dest's folder (O_TMPFILE), given dest's name
    once whole: a bxctl killed part way (SIGKILL, a power cut) leaves nothing beside the owner's
    file to find and remove. Where the file system has no such files, a named temporary file is
    used instead, removed on any failure bxctl lives through. Source is opened and its size
    checked against each room first, so that a file too large leaves nothing made at all."""
    with open(source, "rb") as src:
        size = os.fstat(src.fileno()).st_size
        for room in rooms:
            if size > room.most:
                raise TooLarge(room, size)
        least = min(rooms, key=lambda room: room.most, default=None)
        _write_from(src if least is None else _Capped(src, least), dest, owner)


def _write_from(src, dest: Path, owner: tuple[int, int] | None) -> None:
    folder = os.open(dest.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fd = os.open(".", os.O_WRONLY | os.O_TMPFILE, 0o600, dir_fd=folder)
            tmp = None
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise
            # a short name, not dest's own with more added: dest's name may be as long as a
            # name can be
            tmp = dest.with_name(f".bxctl-{os.urandom(6).hex()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                if owner is not None:
                    os.fchown(out.fileno(), *owner)
                shutil.copyfileobj(src, out, 1 << 20)
                out.flush()
                os.fsync(out.fileno())
                if tmp is None:
                    # linkat with AT_SYMLINK_FOLLOW, which a dir_fd makes os.link use (plain
                    # link() would link the /proc entry itself)
                    os.link(
                        f"/proc/self/fd/{out.fileno()}",
                        dest.name,
                        src_dir_fd=folder,
                        dst_dir_fd=folder,
                        follow_symlinks=True,
                    )
            if tmp is not None:
                os.link(tmp, dest)
            try:
                os.fsync(folder)
            except OSError:
                # Not written until its folder is synced: the name given is taken back, so the
                # "nothing was left" said of this error is true.
                with contextlib.suppress(OSError):
                    os.unlink(dest.name, dir_fd=folder)
                raise
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):  # its folder gone: what failed is said above
                    os.unlink(tmp)
    finally:
        os.close(folder)


@contextlib.contextmanager
def handed_over(
    path: Path, home: Path, memory_socket, command: str = ""
) -> Iterator[tuple[str, Path | None]]:
    """The name memoryd reads path by in backups/ for command, and the copy made for it (None
    when memoryd reads path itself), the copy removed when the body ends, whatever ends it (an
    interrupt, or SIGTERM or SIGHUP, which cli.py turns into one). A file larger than memoryd
    reads for command, or than the home's disk has room for, is refused before it is copied.

    From before the copy is made until it is removed, a shared lock (flock) is held on backups/:
    memoryd removes the copies a killed bxctl left only when it can take the folder's exclusive
    lock, or once they are older than any bxctl waits (memoryd.data.backup.remove_all_leftovers),
    never one a running bxctl is handing over."""
    try:
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            fail(f"{escape(str(path), markup=False)} {what}; nothing was done", EXIT_REFUSED)
    except OSError as e:
        fail(f"cannot read {escape(str(path), markup=False)}: {e.strerror}", EXIT_REFUSED)
    folder = home / "backups"
    owner = reader_of(folder)
    inside = path.resolve().parent == folder.resolve() and not path.is_symlink()
    if inside and NAME.fullmatch(path.name) and (owner is None or owned_by(path, owner)):
        yield path.name, None
        return
    copy = folder / f".incoming-{os.urandom(6).hex()}{''.join(path.suffixes)[-16:]}"
    copy = copy.with_name("".join(c for c in copy.name if c.isalnum() or c in "._-"))
    if not folder.is_dir():
        if memory_socket is not None and not os.environ.get("BOXMAKER_HOME"):
            fail(
                "the file is handed to memoryd through its home's backups/ folder, and the "
                "socket alone does not say where that is: set BOXMAKER_HOME to memoryd's home "
                "(scripts/stack status names it)",
                EXIT_REFUSED,
            )
        fail(f"{escape(str(folder), markup=False)} is missing; is memoryd set up?", EXIT_REFUSED)
    lock = _hold(folder)
    try:
        try:
            copy_new(path, copy, owner=owner, rooms=room_for(command, folder))
        except KeyboardInterrupt:  # after the link, the copy stands: it is removed all the same
            copy.unlink(missing_ok=True)
            raise
        try:
            yield copy.name, copy
        finally:
            copy.unlink(missing_ok=True)
    finally:
        if lock is not None:
            os.close(lock)


def _hold(folder: Path) -> int | None:
    """A descriptor of folder holding its shared lock, or None when the folder cannot be opened
    to lock (bxctl goes on: memoryd would remove the copy only at a start or a forget while no
    other bxctl holds the lock, and a forget does not run beside an import or a restore)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # memoryd holds the exclusive one for a listing at most
    except OSError:
        os.close(fd)
        return None
    return fd


def reader_of(folder: Path) -> tuple[int, int] | None:
    """Who memoryd runs as, when bxctl runs as root and memoryd as another user (rootful
    containers run it as 10001; rootless ones as the user podman maps it to): the owner of the
    home's backups/ folder, which memoryd made. A file handed over there must be that user's, as
    a 0600 file of root's is one memoryd cannot open. None when no handing over of owners is
    needed or possible (bxctl is not root: the files it makes are its own user's, as memoryd's)."""
    try:
        st = folder.stat()
    except OSError:
        return None  # the missing folder is said below
    return owner_of(st)


def owner_of(st: os.stat_result) -> tuple[int, int] | None:
    """Whom bxctl hands what it makes in a folder of st: its user, when bxctl is root and the
    folder is not root's."""
    return (st.st_uid, st.st_gid) if os.geteuid() == 0 and st.st_uid != 0 else None


def owned_by(path: Path, owner: tuple[int, int]) -> bool:
    try:
        return path.stat().st_uid == owner[0]
    except OSError:
        return False
