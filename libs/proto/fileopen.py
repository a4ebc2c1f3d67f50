"""A role's file opened inside its folder's descriptor, never through a symbolic link.

The folder is opened with O_NOFOLLOW and the file with O_NOFOLLOW and O_NONBLOCK, then checked
with fstat: a link (at the file or at its folder) or anything but a regular file (a FIFO, a
device) raises NotRegular and is neither read, written nor waited on. The base every read, atomic
write and append of proto.files stands on, kept apart so that those import it and not each other.
"""

import errno
import os
import stat
from pathlib import Path

from proto.filerefusal import LINK, refuse, what_stands

DIR_MODE = 0o700
FILE_MODE = 0o600
NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir(path: str | os.PathLike) -> int:
    """A descriptor of the folder at path, refusing a symbolic link or a non-folder there."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
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
    folder = open_dir(path.parent)
    try:
        try:
            fd = os.open(path.name, flags | NOFOLLOW | os.O_NONBLOCK, mode, dir_fd=folder)
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
