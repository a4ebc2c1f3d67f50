"""The safe ways every role reads and writes: folders 0700, files 0600, whole-file replacement
and fsync'd appends, and never through a symbolic link.

atomic_write replaces a file whole (a temporary file in the same folder, fsync, rename, fsync the
folder): a crash leaves the old file or the new one, never half. A rename or link is made only
once its folder is fsync'd: when that fsync fails, atomic_write, create_if_missing and an append
that created its file take it back before raising, so an error always means nothing was written.
append_bytes and append_line add to a journal and fsync before returning; to a file of the
role's own (own) only when it has no other hard link, which the append would write through to (a
copy of a home made with cp -al, a hand link to a file outside it), and made 0600 when looser.
ensure_dir makes every folder it creates 0700, parents included (os.makedirs gives parents the
umask's mode); a folder that already existed is chmodded only when it is the role's own (tighten).

A role's files are what they claim to be. Each file is opened inside its folder's descriptor, the
folder opened with O_NOFOLLOW and the file with O_NOFOLLOW and O_NONBLOCK, then checked with fstat:
a symbolic link (at the file or at its folder) or anything but a regular file (a FIFO, a device)
raises NotRegular and is neither read, written nor waited on. ensure_dir refuses a link or a
non-folder where its folder should be, and sets the mode through the folder's own descriptor, so
it never chmods a folder elsewhere.
"""

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from proto.errors import ProtoError

DIR_MODE = 0o700
FILE_MODE = 0o600
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC

log = logging.getLogger(__name__)


class NotRegular(ProtoError, OSError):
    """A path a role owns is a symbolic link, or not the regular file or folder it should be.
    strerror says what it is ("a symbolic link, which is not followed"), filename where."""

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}"


class TooLarge(ProtoError, OSError):
    """A file larger than its reader allows; strerror names the limit, filename the file."""

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}"


class NotTakenBack(OSError):
    """A write that failed, and whose take-back failed too (the truncate or rename that would
    undo it: a disk turned read-only by the write's own I/O error): path may hold the change.
    errno, strerror, filename and so str() are the write's own (cause), so every answer built
    from them reads as before; only a caller that asks learns the file may have changed."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause), cause.filename)
        self.path = Path(path)
        self.cause = cause


LINK = "a symbolic link, which is not followed"


def what_stands(st: os.stat_result, folder: bool = False) -> str:
    """What stands where a role's file (or, folder: its folder) should be, as NotRegular says it."""
    if stat.S_ISLNK(st.st_mode):
        return LINK
    if folder:
        return "not a folder"
    if stat.S_ISDIR(st.st_mode):
        return "not a file"
    if stat.S_ISFIFO(st.st_mode):
        return "a FIFO, not a regular file"
    if stat.S_ISSOCK(st.st_mode):
        return "a socket, not a regular file"
    return "not a regular file"


def hard_links(st: os.stat_result) -> str:
    """What NotRegular says of a file a role writes in place that has another name too: each
    write would change the file at that name (perhaps outside the role's folder) as well."""
    return (
        f"a file with {st.st_nlink:,} hard links, so a write to it would change the file at its "
        "other name too (give it a copy of its own: cp it to a new name, then mv that over it)"
    )


def refuse(path: str | os.PathLike, why: str) -> NotRegular:
    """The NotRegular for path, why being what_stands' words."""
    return NotRegular(errno.ELOOP, why, os.fspath(path))


def _open_dir(path: str | os.PathLike) -> int:
    """A descriptor of the folder at path, refusing a symbolic link or a non-folder there."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        try:
            st = os.lstat(path)
        except OSError:
            raise e from None
        if stat.S_ISDIR(st.st_mode):
            raise
        raise refuse(path, what_stands(st, folder=True)) from None


def open_file(path: str | os.PathLike, flags: int, mode: int = FILE_MODE) -> int:
    """A descriptor of the regular file at path, opened with flags, never through a link."""
    path = Path(path)
    folder = _open_dir(path.parent)
    try:
        try:
            fd = os.open(path.name, flags | _NOFOLLOW | os.O_NONBLOCK, mode, dir_fd=folder)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise refuse(path, LINK) from None
            if e.errno not in (errno.ENXIO, errno.EOPNOTSUPP):
                raise
            # a FIFO with no reader, opened to write, or a socket: named as what stands there
            try:
                st = os.lstat(path.name, dir_fd=folder)
            except OSError:
                raise e from None
            if stat.S_ISREG(st.st_mode):
                raise
            raise refuse(path, what_stands(st)) from None
    finally:
        os.close(folder)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise refuse(path, what_stands(st))
    os.set_blocking(fd, True)
    return fd


def read_file(path: str | os.PathLike) -> bytes:
    """The whole content of the regular file at path, in one open."""
    with os.fdopen(open_file(path, os.O_RDONLY), "rb") as f:
        return f.read()


def open_read(path: str | os.PathLike):
    """The regular file at path opened for reading in binary (a file object)."""
    return os.fdopen(open_file(path, os.O_RDONLY), "rb")


def read_setting(path: str | os.PathLike, limit: int) -> bytes:
    """An owner's settings file whole (a role's config, system.md, the starter soul.md), at most
    limit bytes. A symbolic link is followed, as the owner may keep the file anywhere, but what it
    ends at must be a regular file: a FIFO is refused without waiting for a writer, a folder or a
    device without reading it (NotRegular); a file over limit bytes is TooLarge, read no further."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder, not a file" if stat.S_ISDIR(st.st_mode) else what_stands(st)
            raise refuse(path, what)
        os.set_blocking(fd, True)
        data = read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"larger than {limit:,} bytes", os.fspath(path))
    return data


def read_at_most(fd: int, size: int) -> bytes:
    """Up to size bytes from fd, fewer only at its end: read size bytes from a file of a bounded
    reader and the file is longer than the bound exactly when the answer has all size of them."""
    chunks, got = [], 0
    while got < size:
        chunk = os.read(fd, size - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def check_entry(path: str | os.PathLike, folder: bool = False) -> None:
    """Refuse path unless it is missing or a real folder (folder) or regular file (not folder)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if folder and not stat.S_ISDIR(st.st_mode):
        why = (
            "a symbolic link, which is not followed"
            if stat.S_ISLNK(st.st_mode)
            else ("not a folder")
        )
        raise refuse(path, why)
    if not folder and not stat.S_ISREG(st.st_mode):
        raise refuse(path, what_stands(st))


def ensure_dir(path: str | os.PathLike, *, tighten: bool = True) -> None:
    """Create a folder and any missing parents, each 0700; a symbolic link or a non-folder where
    the folder should be is refused (NotRegular).

    tighten also sets 0700 on the folder itself when it already existed: right for a folder of
    the role's own in {home}, wrong for one it was only told to put something in (a socket in
    /tmp or /run is the owner's choice, and chmodding such a shared folder would break every
    other user of it), so there tighten=False leaves an existing folder's mode as it is."""
    path = Path(path)
    missing = []
    probe = path
    while not os.path.lexists(probe):
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        _chmod_dir(folder)
    if not missing:
        if tighten:
            _chmod_dir(path)
        else:
            os.close(_open_dir(path))


def _chmod_dir(path: Path) -> None:
    fd = _open_dir(path)
    try:
        os.fchmod(fd, DIR_MODE)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(folder: int, name: str, data: bytes | Iterable[bytes], durable: bool = True) -> str:
    """A new temporary file in the folder of descriptor folder holding data, fsync'd (when
    durable); its name. data may be chunks, written as they come, so that a file rewritten as a
    stream (notes.md, which has no limit) is never held whole; an error raised while they are
    made removes the temporary file, and the file at the name is left as it was."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, FILE_MODE, dir_fd=folder)
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
    folder = _open_dir(path.parent)
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
                    _undo(folder, path, new, old)
                raise
    finally:
        if old is not None:
            os.close(old)
        os.close(folder)


def _open_old(folder: int, path: Path) -> int | None:
    """A descriptor of the file at path, kept open across the rename so that its bytes can be
    written back; None when it cannot be opened (then the rename cannot be taken back)."""
    try:
        fd = os.open(path.name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _undo(folder: int, path: Path, new: os.stat_result, old: int | None) -> None:
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
    folder = _open_dir(path.parent)
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
            _undo(folder, path, new, None)
            raise
        return True
    finally:
        os.close(folder)


def append_bytes(path: str | os.PathLike, data: bytes, *, own: bool = False) -> None:
    """Append data to path (created 0600 if missing) and fsync before returning. own: a file of
    the role's own (_as_own), refused when it has another hard link, made 0600 when looser."""
    _append(path, data, own_line=False, own=own)


def append_line(path: str | os.PathLike, line: str, *, own: bool = False) -> None:
    """Append one line (a newline is added) to a journal, fsync'd, on a line of its own: a file
    whose last line lost its newline (an editor, a torn append) gets one first, or the line would
    be glued onto that one and both be lost to a reader of lines. own: as for append_bytes."""
    _append(path, (line + "\n").encode("utf-8"), own_line=True, own=own)


def _as_own(fd: int, path: str | os.PathLike) -> None:
    """Check the file at fd, about to be written in place, as a file of the role's own: one with
    another hard link is refused before a byte is written (NotRegular), as the write would land
    at its other name too; one whose mode lets others read it is set to 0600 (logged; a file
    the role may not chmod, not its user's, is written as it is)."""
    st = os.fstat(fd)
    if st.st_nlink > 1:
        raise refuse(path, hard_links(st))
    with contextlib.suppress(OSError):
        was = tighten(fd)
        if was is not None:
            log.info("%s: mode %04o set to %04o, as the role's own files are", path, was, FILE_MODE)


def tighten(fd: int) -> int | None:
    """Set 0600 on the regular file at fd when its mode lets anyone but its owner in: the mode
    it had, or None when it was tight already. A file with another hard link is left as it is
    (None): its mode is the file's at the other name too. OSError: not the user's to chmod."""
    st = os.fstat(fd)
    was = stat.S_IMODE(st.st_mode)
    if st.st_nlink > 1 or not was & ~FILE_MODE:
        return None
    os.fchmod(fd, FILE_MODE)
    return was


def _append(path: str | os.PathLike, data: bytes, own_line: bool, own: bool = False) -> None:
    new = not os.path.lexists(path)
    fd = open_file(path, (os.O_RDWR if own_line else os.O_WRONLY) | os.O_APPEND | os.O_CREAT)
    try:
        if own:
            _as_own(fd, path)
        size = os.fstat(fd).st_size
        if own_line and size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        except OSError as e:
            # A full disk cuts a write short: the part written goes, or the next line would be
            # glued onto it and both be lost to a reader of lines. One writer appends to each
            # of these files, so nothing of another's is cut.
            if not _truncated(fd, size):
                raise NotTakenBack(path, e) from e
            raise
        created = os.fstat(fd) if new else None
    finally:
        os.close(fd)
    if created is not None:
        _sync_created(Path(path), created)


def _truncated(fd: int, size: int) -> bool:
    """Cut fd back to size; whether it is (a disk turned read-only cannot be truncated)."""
    try:
        if os.fstat(fd).st_size != size:
            os.ftruncate(fd, size)
    except OSError:
        return False
    return True


def _sync_created(path: Path, created: os.stat_result) -> None:
    """fsync the folder of a file the append created; when that fails, the file is removed
    before the error is raised, so that an append answered as failed left nothing."""
    folder = _open_dir(path.parent)
    try:
        try:
            os.fsync(folder)
        except OSError:
            _undo(folder, path, created, None)
            raise
    finally:
        os.close(folder)
