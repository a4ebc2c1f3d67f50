"""Whole-file replacement and creation, whole or not at all.

atomic_write replaces a file whole (a temporary file in the same folder, fsync, rename, fsync the
folder): a crash leaves the old file or the new one, never half. A rename or link is made only
once its folder is fsync'd: when that fsync fails, atomic_write and create_if_missing take it back
(undo) before raising, so an error always means nothing was written; an append that created its
file takes it back the same way.
"""

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from proto.fileopen import FILE_MODE, NOFOLLOW, open_dir, read_at_most
from proto.filerefusal import refuse, what_stands


def _write_temp(folder: int, name: str, data: bytes | Iterable[bytes], durable: bool = True) -> str:
    """A new temporary file in the folder of descriptor folder holding data, fsync'd (when
    durable); its name. data may be chunks, written as they come, so that a file rewritten as a
    stream (notes.md, which has no limit) is never held whole; an error raised while they are
    made removes the temporary file, and the file at the name is left as it was."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, FILE_MODE, dir_fd=folder)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                for chunk in data:
                    f.write(chunk)
            f.flush()
            if durable:
                os.fsync(f.fileno())
    except BaseException:
        os.unlink(tmp, dir_fd=folder)
        raise
    return tmp


def _check_at(folder: int, path: Path) -> bool:
    """True when path exists in folder; NotRegular when it is there but not a regular file."""
    try:
        st = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise refuse(path, what_stands(st))
    return True


def atomic_write(
    path: str | os.PathLike,
    data: bytes | Iterable[bytes],
    *,
    durable: bool = True,
    undo_unsynced: bool = True,
) -> None:
    """Replace path with data (bytes, or chunks written as they come), whole or not at all;
    refused if path is not a regular file.
    durable=False leaves out the fsyncs, for a file whose loss at a power cut loses nothing
    another file does not hold (a kill still leaves it old or new).

    The write is made only once the folder is fsync'd: when that fails (an I/O error), the
    rename is taken back before the error is raised (the old bytes written back, or the new
    file removed), so that every caller's "not written" is true. undo_unsynced=False keeps the
    new file in place even then: for a rollback's put back, whose bytes are what must stand."""
    path = Path(path)
    folder = open_dir(path.parent)
    old = None
    try:
        existed = _check_at(folder, path)
        if durable and undo_unsynced and existed:
            old = _open_old(folder, path)
        tmp = _write_temp(folder, path.name, data, durable)
        new = os.stat(tmp, dir_fd=folder, follow_symlinks=False)
        try:
            os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except FileNotFoundError:
                pass
            raise
        if durable:
            try:
                os.fsync(folder)
            except OSError:
                if undo_unsynced and (old is not None or not existed):
                    undo(folder, path, new, old)
                raise
    finally:
        if old is not None:
            os.close(old)
        os.close(folder)


def _open_old(folder: int, path: Path) -> int | None:
    """A descriptor of the file at path, kept open across the rename so that its bytes can be
    written back; None when it cannot be opened (then the rename cannot be taken back)."""
    try:
        fd = os.open(path.name, os.O_RDONLY | NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def undo(folder: int, path: Path, new: os.stat_result, old: int | None) -> None:
    """Take back the rename or link that put the file new at path: its old bytes (read from
    the descriptor old) written back, or path removed when old is None. Only the file new is
    taken back (one put there since is not); a take-back that cannot run leaves it as it is,
    and the caller raises the error it already has."""
    with contextlib.suppress(OSError):
        st = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
        if (st.st_dev, st.st_ino) != (new.st_dev, new.st_ino):
            return
        if old is None:
            os.unlink(path.name, dir_fd=folder)
        else:
            data = read_at_most(old, os.fstat(old).st_size)
            tmp = _write_temp(folder, path.name, data)
            try:
                os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
            except OSError:
                os.unlink(tmp, dir_fd=folder)
                raise
        os.fsync(folder)


def create_if_missing(path: str | os.PathLike, data: bytes = b"") -> bool:
    """Create path with data unless it exists; never overwrite. True when it was created; an
    OSError leaves no file (one linked in before the folder's fsync failed is removed)."""
    path = Path(path)
    folder = open_dir(path.parent)
    try:
        if os.path.lexists(path):
            return False
        tmp = _write_temp(folder, path.name, data)
        try:
            new = os.stat(tmp, dir_fd=folder, follow_symlinks=False)
            os.link(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp, dir_fd=folder)
        try:
            os.fsync(folder)
        except OSError:
            undo(folder, path, new, None)
            raise
        return True
    finally:
        os.close(folder)
