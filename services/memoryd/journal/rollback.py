"""Taking a failed write back, so that a full disk never leaves half an edit.

The invariant: after any failure, each memory file is unchanged or holds the change together with
its journal line, and notes.md and the journal end on a whole entry. An edit writes notes.md
(append), then its file (rename), then its journal line (append). When a step fails, the steps
before it are taken back before the call is answered:

- an append is cut back to the size the file had before it (ftruncate, fsync), which needs no
  free space, so a torn note is never indexed and a retry never writes it twice;
- a renamed file is put back by renaming in a hard link to its old bytes, made before the rename
  (a link needs no data blocks, so it works on a full disk). The link is named like a temporary
  file (.memory.md.XXXX.tmp), so one left by a crash is removed at the next start. Where the
  file system has no hard links, the old bytes are kept in memory and written back atomically.

A take-back can fail too: ext4's default errors=remount-ro turns the disk read-only after the
I/O error that failed the write, and where the old bytes are kept in memory a full disk cannot
take them back. take_back and put_back then say so (False), and append_or_cut_back raises
NotTakenBack: the caller must not answer that the file is unchanged.

A crash (not a failure) is the crash harness's business: the order of the writes covers it.
"""

import errno
import logging
import os
import secrets
import stat
from pathlib import Path

from memoryd.home import atomic_write, fsync_dir, read_file
from proto.files import NotTakenBack

log = logging.getLogger(__name__)


def first_cause(e: OSError) -> OSError:
    """The write's own error under a NotTakenBack (or e itself)."""
    return e.cause if isinstance(e, NotTakenBack) else e


def size_of(path: Path) -> int | None:
    """The size of path now, or None when it does not exist."""
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return None


def cut_back(path: Path, size: int | None) -> None:
    """Truncate path to size (remove it when size is None: the append created it), durably.
    A file still at that size is not opened: on a read-only file system the open for writing
    would fail, and a take-back with nothing to take back must not hide the write's own error."""
    if size is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        try:
            fsync_dir(path.parent)
        except OSError as e:  # removed: the append is taken back, only not yet durably
            log.error("%s: removed, but its folder cannot be synced: %s", path, e.strerror or e)
        return
    try:
        if os.lstat(path).st_size == size:
            return
    except FileNotFoundError:
        return  # nothing there to cut back
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO):
            return  # a link or a FIFO: the append never wrote through it, nothing to take back
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return
        if info.st_size != size:
            os.ftruncate(fd, size)
            os.fsync(fd)
    finally:
        os.close(fd)


def take_back(path: Path, size: int | None) -> bool:
    """cut_back for a write that already failed: one that cannot run is logged, never raised,
    so the caller answers with the write's own cause (the disk full, read-only). Whether path
    is back at size: when not, it may hold what the write appended."""
    try:
        cut_back(path, size)
    except OSError as e:
        log.error("%s: a failed write cannot be cut back to %s bytes: %s", path, size, e)
        return False
    return True


def append_or_cut_back(path: Path, append) -> None:
    """Run append() (which adds to path); if it fails, cut path back before re-raising. An
    OSError whose cut-back fails too is raised as NotTakenBack: path may hold the append."""
    before = size_of(path)
    try:
        append()
    except BaseException as failed:
        try:
            cut_back(path, before)
        except OSError as e:
            log.error("%s: a failed append cannot be cut back to %s bytes: %s", path, before, e)
            if isinstance(failed, OSError):
                raise NotTakenBack(path, first_cause(failed)) from failed
            raise
        if isinstance(failed, NotTakenBack):
            raise failed.cause from None  # cut back here after all
        raise


def keep_old(path: Path) -> Path | bytes | None:
    """path's bytes as they are now, to put back if the edit fails: a hard link to them, or the
    bytes themselves where the file system has no hard links; None when there is no file."""
    link = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        os.link(path, link)
    except FileNotFoundError:
        return None
    except OSError as e:
        log.info("%s: no hard link (%s); its old bytes are kept in memory", path, e.strerror)
        return path.read_bytes()
    return link


def put_back(old: Path | bytes | None, path: Path) -> bool:
    """Make path the old bytes again (atomic rename of the link), durably; log when it cannot.
    The old bytes stand even when the folder cannot be synced after (it is said so): a write
    taken back is never put in place again. Whether path holds the old bytes again: when not,
    it may still hold the write."""
    try:
        if old is None:
            os.unlink(path)
        elif isinstance(old, bytes):
            atomic_write(path, old, undo_unsynced=False)
        else:
            os.replace(old, path)
    except OSError as e:
        if not (isinstance(old, bytes) and _holds(path, old)):
            log.error("%s: the old bytes cannot be put back after a failed edit: %s", path, e)
            return False
        unsynced = e  # written back; only the folder's fsync failed
    else:
        try:
            fsync_dir(path.parent)
            return True
        except OSError as e:
            unsynced = e
    log.error("%s: the old bytes are put back, but the folder cannot be synced: %s", path, unsynced)
    return True


def _holds(path: Path, data: bytes) -> bool:
    """Whether path holds exactly data now (False when it cannot be read)."""
    try:
        return read_file(path) == data
    except OSError:
        return False


def drop(old: Path | bytes | None) -> None:
    if not isinstance(old, Path):
        return
    try:
        os.unlink(old)
    except OSError as e:
        log.warning("%s: cannot remove the old bytes kept for a rollback: %s", old, e.strerror)
