"""fsync'd appends to a journal or a log, on a line of their own.

append_bytes and append_line add to a file and fsync before returning; a write a full disk cut
short is cut back, so the next line is never glued onto half of one. To a file of the role's own
(own) only when it has no other hard link, which the append would write through to (a copy of a
home made with cp -al, a hand link to a file outside it), and made 0600 when looser.
"""

import contextlib
import logging
import os
import stat
from pathlib import Path

from proto.atomicwrite import undo
from proto.fileopen import FILE_MODE, open_dir, open_file
from proto.filerefusal import NotTakenBack, hard_links, refuse

# The name its lines have carried in a role's log since appends were part of proto.files.
log = logging.getLogger("proto.files")


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
    folder = open_dir(path.parent)
    try:
        try:
            os.fsync(folder)
        except OSError:
            undo(folder, path, created, None)
            raise
    finally:
        os.close(folder)
