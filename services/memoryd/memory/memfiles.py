"""Reading the memory files from disk, each in one read, as they are now; replacing one only if
it still holds what the edit was planned from.

Each file is read whole with one open and one read (never through a symbolic link, never from a
FIFO: proto.files.open_file), so a reader running beside the writer sees
the file before or after an atomic rename, never a mix. A missing, unreadable or non-UTF-8 file
raises FileDamaged naming the file and the problem: memoryd created every file at start, so a
missing one is a sign something is wrong, not an empty memory.

A file far over anything memoryd writes (over MAX_BYTES: memory.md holds at most 2,200 characters,
user.md 1,375, soul.md is the owner's 4,000) is not read at all: a wrong file saved over one, or a
runaway script, would otherwise be read, parsed and journalled whole on every call. It is
TooLarge (a FileDamaged naming the file and its size), so the block, a write, hand-edit detection
and stats refuse it as a damaged file, and all work again once the owner shrinks it.

The owner edits memory.md and user.md in an editor while memoryd writes them, and neither waits
for the other: an editor saves by renaming its own file into place at any moment. A plain rename
of memoryd's new file would then replace a hand edit saved after memoryd read the file, and it
would be lost. So replace_unchanged, as editors do, reads the file again just before the rename
and gives up when it changed; and the rename itself is an exchange (renameat2 RENAME_EXCHANGE),
so what it replaced is still there under the temporary name: when that is not what was checked
(a save that landed between the check and the rename), it is exchanged back into place and the
write gives up too. Where the file system cannot exchange, a plain rename follows the check, and
only the instant between them is left open. The swap is made only once the folder is fsync'd:
when that fails, the old bytes are swapped (or renamed) back before the error goes up, so a
write answered "not applied" never stays in the file.
"""

import ctypes
import errno
import logging
import os
import secrets
from pathlib import Path

from memoryd.errors import FileDamaged
from memoryd.home import FILE_MODE, Home, fsync_dir
from memoryd.journal import rollback
from memoryd.memory import entries
from memoryd.memory.entries import MAX_BYTES, TooLarge
from proto.files import NotRegular, open_file, read_at_most

log = logging.getLogger(__name__)


def read_text(path: Path, name: str) -> str:
    """The text of a memory file (entries.decode), read in one open; TooLarge, unread, when it
    holds more than MAX_BYTES."""
    try:
        fd = open_file(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            # Read one byte past the bound, so a file growing while it is read is caught too.
            data = b"" if size > MAX_BYTES else read_at_most(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise FileDamaged(f"{name} is missing") from None
    except NotRegular as e:
        raise FileDamaged(f"{name} is {e.strerror}") from None
    except IsADirectoryError:
        raise FileDamaged(f"{name} is not a file") from None
    except OSError as e:
        raise FileDamaged(f"{name} cannot be read ({e.strerror or e})") from None
    if size > MAX_BYTES or len(data) > MAX_BYTES:
        raise TooLarge(name, max(size, len(data)))
    return entries.decode(data, name)


def read_entries(home: Home, name: str) -> list[str]:
    """The entries of memory.md or user.md as they are on disk now."""
    return entries.parse(read_text(home.memory_file(name), name))


def holds(path: Path, expected: list[str] | tuple[str, ...]) -> bool:
    """Whether the file at path holds exactly the entries expected (False when it cannot be read
    or parsed: a changed file, whatever it holds now)."""
    try:
        return entries.parse(read_text(path, path.name)) == list(expected)
    except FileDamaged:
        return False


RENAME_EXCHANGE = 2
_UNSUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP)
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)
if _renameat2 is not None:
    _renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    _renameat2.restype = ctypes.c_int


def exchange(folder: Path, a: str, b: str) -> bool:
    """Swap the names a and b in folder atomically; False when the file system cannot."""
    if _renameat2 is None:
        return False
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if _renameat2(fd, os.fsencode(a), fd, os.fsencode(b), RENAME_EXCHANGE) == 0:
            return True
        err = ctypes.get_errno()
    finally:
        os.close(fd)
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), str(folder / b))


def write_temp(path: Path, data: bytes) -> Path:
    """A new file beside path holding data, fsync'd (named like every temporary file memoryd
    leaves, so one left by a crash is removed at the next start)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _remove(tmp)
        raise
    os.close(fd)
    return tmp


class Changed:
    """replace_unchanged gave up: the file no longer holds what the edit was planned from."""


CHANGED = Changed()


def replace_unchanged(
    path: Path, data: bytes, planned_from: list[str] | tuple[str, ...]
) -> Path | bytes | None | Changed:
    """Replace path with data (fsync'd, renamed, the folder fsync'd) if it still holds the
    entries planned_from; CHANGED, with path as it was, if not. Otherwise what rollback.put_back
    needs to make path its old bytes again (rollback.keep_old), for the caller to put back or
    drop. An OSError leaves path as it was."""
    tmp = write_temp(path, data)
    exchanged, old = False, None
    try:
        if not holds(path, planned_from):
            _remove(tmp)
            return CHANGED
        exchanged = exchange(path.parent, tmp.name, path.name)
        if not exchanged:
            # No exchange here: the old bytes are kept first and checked again, so only the
            # instant between keeping them and this rename is open to a save.
            old = rollback.keep_old(path)
            if not _kept_holds(old, path.name, planned_from):
                rollback.drop(old)
                _remove(tmp)
                return CHANGED
            os.replace(tmp, path)
    except FileNotFoundError:
        rollback.drop(old)
        _remove(tmp)
        return CHANGED  # removed by hand since the check: the write is planned again
    except BaseException:
        rollback.drop(old)
        _remove(tmp)
        raise
    if not exchanged:
        # The write is not made until the folder is synced: an error there takes the rename
        # back, so that the caller's "unchanged" is true.
        try:
            fsync_dir(path.parent)
        except OSError:
            if _holds_bytes(path, data):  # not a save landed since, which stays
                rollback.put_back(old, path)
            else:
                rollback.drop(old)
            raise
        return old
    # tmp now names what the exchange replaced.
    if holds(tmp, planned_from):
        try:
            fsync_dir(path.parent)
        except OSError:
            _exchange_back(path, tmp, data)
            raise
        return tmp
    # A save landed between the check and the exchange: put it back in place, untouched.
    try:
        exchange(path.parent, tmp.name, path.name)
    except OSError as e:
        log.error(
            "%s: a hand edit saved while memoryd wrote it is kept in %s (%s)",
            path,
            tmp,
            e.strerror,
        )
        raise
    _drop_swapped(path, tmp, data)
    fsync_dir(path.parent)
    return CHANGED


def _exchange_back(path: Path, tmp: Path, data: bytes) -> None:
    """Take back an exchange whose folder could not be synced: path its old bytes again (now
    at tmp), unless a save replaced the write since, which stays; logged when it cannot."""
    try:
        if _holds_bytes(path, data):
            exchange(path.parent, tmp.name, path.name)
            _drop_swapped(path, tmp, data)
        else:
            _remove(tmp)
        fsync_dir(path.parent)
    except OSError as e:
        log.error("%s: a write that failed cannot be taken back: %s", path, e.strerror or e)


def _drop_swapped(path: Path, tmp: Path, data: bytes) -> None:
    """Remove tmp, exchanged back out of path; when it holds anything but data (a save that
    landed just before the exchange back), it is kept beside path and logged instead."""
    if _holds_bytes(tmp, data):
        _remove(tmp)
        return
    kept = path.with_name(f"{path.name}.hand-edit-{secrets.token_hex(4)}")
    os.replace(tmp, kept)
    log.error("%s: a hand edit saved while memoryd wrote it is kept in %s", path, kept)


def _kept_holds(old: Path | bytes | None, name: str, expected: list[str] | tuple[str, ...]) -> bool:
    """Whether the old bytes rollback.keep_old kept hold the entries expected."""
    if old is None:
        return False
    if isinstance(old, Path):
        return holds(old, expected)
    try:
        return entries.parse(entries.decode(old, name)) == list(expected)
    except FileDamaged:
        return False


def _holds_bytes(path: Path, data: bytes) -> bool:
    """Whether path holds exactly data, read no further than its length (a hand save put back
    in place may be of any size)."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return os.fstat(fd).st_size == len(data) and read_at_most(fd, len(data) + 1) == data
    except OSError:
        return False
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
