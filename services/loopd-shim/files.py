"""The safe ways loopd-shim writes: folders 0700, files 0600, whole-file writes made atomic.

atomic_write: a temporary file in the same folder, fsync, rename, fsync the folder, so a crash
leaves no file or the whole file, never half of one.
"""

import os
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_dir(path: Path) -> None:
    """Create a folder 0700 (and its parents) if missing, and set 0700 on it."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Put data at path, whole or not at all."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def create_empty(path: Path) -> None:
    """Create an empty file 0600 that must not exist yet, and make its name durable."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
