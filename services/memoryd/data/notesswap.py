"""notes.md replaced by memoryd's rewrite of it (forget's marker, an import's stricter header) only
while it is still the file the rewrite read, so that a save of the owner's never goes.

The owner saves notes.md in an editor (a new file renamed over the old) or appends to it while
memoryd rewrites it, and neither waits for the other; notes.md has no limit, so a rewrite that
streams it takes as long as the file is large. A plain rename of the rewrite would put the notes
it read back over the owner's save. So, as memory.md's writes do (memory/memfiles.py), the rewrite
is put in place only while the file at the name is the one read (its device, inode, size and
modification time when it was opened, none of which a save or an append leaves alone), checked
just before the swap; and the swap is an exchange, so what it replaced is still there under the
temporary name: when that is not the file read (a save landed between the check and the swap),
it is exchanged back, untouched, and the rewrite gives up. Where the file system cannot exchange,
the file at the name is opened and checked, then the rewrite renamed over it, so only the instant
between them is left open. The folder is fsync'd before the old file goes; when that fails, the
old file is put back (unless a save replaced the rewrite since, which stays) before the error
goes up, so a rewrite that failed never stays in the file.

A kill between the exchange and its taking back leaves a save of the owner's under the temporary
name, where the next start removes the leftovers of a crash. So once the rewrite is whole, its
temporary name records the identities of the file read and of the rewrite before anything is
exchanged, and the start removes a leftover only when it is one of the two (the notes a forget
took text out of must not stay); any other is kept beside notes.md, logged (kept_leftover). A
leftover named without the record is one no exchange touched (a rewrite not yet whole, a put-back's
copy, or one an older memoryd left), memoryd's alone, and removed as before.
"""

import datetime as dt
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from memoryd.home import FILE_MODE, NotRegular, atomic_write, fsync_dir, open_file
from memoryd.memory import memfiles

log = logging.getLogger(__name__)

Identity = tuple[int, int, int, int]  # device, inode, size, modification time (ns)


# The temporary name of a whole rewrite: the file's name, a random part, then the file read's and
# the rewrite's inode, size and modification time (ns; before 1970 it is negative), in hex. Not
# the device: a leftover is in the folder of the file, and a device's number may change at boot.
_PART = r"-?[0-9a-f]+_-?[0-9a-f]+_-?[0-9a-f]+"
RECORDED = re.compile(
    rf"\A\.(?P<file>.+)\.[0-9a-f]{{12}}\.r(?P<read>{_PART})\.n(?P<new>{_PART})\.tmp\Z"
)


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def opened(f) -> Identity:
    """The identity of the file the open file object f reads."""
    return identity(os.fstat(f.fileno()))


def replace_read(path: Path, read: Identity, chunks: Iterable[bytes]) -> Identity | None:
    """Replace path with chunks (a rewrite of the file read, written to a temporary file beside
    it and fsync'd first) only while the file at path is read; the new file's identity, or None
    when it is not (path left as it stands, the rewrite removed). An error raised while chunks
    are made removes the rewrite too, and an OSError leaves path as it was."""
    tmp, new = _write_temp(path, chunks)
    try:
        tmp = _recorded(tmp, read, new)
        if _at(path) != read:
            _remove(tmp)
            return None
        exchanged = memfiles.exchange(path.parent, tmp.name, path.name)
    except BaseException:
        _remove(tmp)
        raise
    if exchanged:
        return _exchanged(path, tmp, read, new)
    return _renamed(path, tmp, read, new)


def _exchanged(path: Path, tmp: Path, read: Identity, new: Identity) -> Identity | None:
    """After the exchange, tmp names what it replaced: the file read, removed once the folder
    is synced; or a save that landed just before the exchange, put back in place."""
    if _at(tmp) != read:
        try:
            memfiles.exchange(path.parent, tmp.name, path.name)
        except OSError as e:
            log.error("%s: a save made while memoryd rewrote it is kept in %s (%s)", path, tmp, e)
            raise
        _drop_rewrite(path, tmp, new)
        fsync_dir(path.parent)
        return None
    try:
        fsync_dir(path.parent)
    except OSError:
        _exchange_back(path, tmp, new)
        raise
    _remove(tmp)
    return new


def _exchange_back(path: Path, tmp: Path, new: Identity) -> None:
    """Take back an exchange whose folder could not be synced: the file read (at tmp) in place
    again, unless a save replaced the rewrite since, which stays; logged when it cannot."""
    try:
        if _same_file(_at(path), new):
            memfiles.exchange(path.parent, tmp.name, path.name)
            _drop_rewrite(path, tmp, new)
        else:
            _remove(tmp)
        fsync_dir(path.parent)
    except OSError as e:
        log.error("%s: a rewrite that failed cannot be taken back: %s", path, e.strerror or e)


def _drop_rewrite(path: Path, tmp: Path, new: Identity) -> None:
    """Remove the rewrite, exchanged back out of path to tmp; when tmp holds anything else (a
    save, or an append to the rewrite, made while it stood), it is kept beside path and logged."""
    if _at(tmp) == new:
        _remove(tmp)
        return
    kept = _keep(path, tmp)
    log.error("%s: a save made while memoryd rewrote it is kept in %s", path, kept)


def _keep(path: Path, tmp: Path) -> Path:
    """tmp renamed to path.hand-edit-<time>-<hex> beside path, never over a file; that name."""
    stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}"
    while True:
        kept = path.with_name(f"{path.name}.hand-edit-{stamp}-{secrets.token_hex(2)}")
        if not os.path.lexists(kept):
            break
    os.rename(tmp, kept)
    return kept


def kept_leftover(tmp: Path) -> Path | None:
    """A temporary file a kill left beside notes.md, kept as notes.md.hand-edit-<time>-<hex>
    (logged) when it is neither the file read nor the rewrite that its name records: a save of the
    owner's that the exchange had moved out. The name it is kept under, or None when the leftover
    is memoryd's, to be removed (so is one whose name records nothing)."""
    named = RECORDED.match(tmp.name)
    if named is None:
        return None
    try:
        st = os.lstat(tmp)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None  # not a save: an editor saves a regular file
    if identity(st)[1:] in (_unhexed(named["read"]), _unhexed(named["new"])):
        return None
    kept = _keep(tmp.with_name(named["file"]), tmp)
    log.warning(
        "%s: a save left under memoryd's temporary name %s by a crash while memoryd rewrote %s "
        "is kept here for the owner to merge",
        kept,
        tmp.name,
        named["file"],
    )
    return kept


def _renamed(path: Path, tmp: Path, read: Identity, new: Identity) -> Identity | None:
    """No exchange here: the file at path is opened and checked, then the rewrite renamed over
    it, so only the instant between the two is open to a save. The open file is what a rename
    whose folder cannot be synced is put back from."""
    try:
        old = open_file(path, os.O_RDONLY)
    except (FileNotFoundError, NotRegular):
        _remove(tmp)
        return None
    except BaseException:
        _remove(tmp)
        raise
    try:
        if identity(os.fstat(old)) != read:
            _remove(tmp)
            return None
        try:
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)
            raise
        try:
            fsync_dir(path.parent)
        except OSError:
            _put_back(path, old, new)
            raise
        return new
    finally:
        os.close(old)


def _put_back(path: Path, old: int, new: Identity) -> None:
    """The bytes of the file read (the descriptor old) written back over the rewrite, unless a
    save replaced the rewrite since, which stays; logged when it cannot."""
    if not _same_file(_at(path), new):
        return
    try:
        atomic_write(path, _chunks(old), undo_unsynced=False)
    except OSError as e:
        log.error("%s: a rewrite that failed cannot be taken back: %s", path, e.strerror or e)


def _chunks(fd: int, size: int = 1 << 20) -> Iterator[bytes]:
    at = 0
    while chunk := os.pread(fd, size, at):
        at += len(chunk)
        yield chunk


def _write_temp(path: Path, chunks: Iterable[bytes]) -> tuple[Path, Identity]:
    """A new file beside path holding chunks, fsync'd, and its identity; named like every
    temporary file memoryd leaves, so that one left by a crash is removed at the next start."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, FILE_MODE)
    try:
        with open(fd, "wb") as f:
            os.fchmod(fd, FILE_MODE)
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(fd)
            return tmp, identity(os.fstat(fd))
    except BaseException:
        _remove(tmp)
        raise


def _recorded(tmp: Path, read: Identity, new: Identity) -> Path:
    """The whole rewrite at tmp renamed to a name recording read and new (RECORDED); a rename
    leaves the rewrite's inode, size and modification time as they were."""
    named = tmp.with_name(f"{tmp.name.removesuffix('.tmp')}.r{_hexed(read)}.n{_hexed(new)}.tmp")
    os.rename(tmp, named)
    return named


def _hexed(at: Identity) -> str:
    return "_".join(f"{n:x}" for n in at[1:])


def _unhexed(part: str) -> tuple[int, ...]:
    return tuple(int(n, 16) for n in part.split("_"))


def _at(path: Path) -> Identity | None:
    """The identity of what stands at path (a link's own), or None when nothing does."""
    try:
        return identity(os.lstat(path))
    except FileNotFoundError:
        return None


def _same_file(a: Identity | None, b: Identity) -> bool:
    return a is not None and a[:2] == b[:2]


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
