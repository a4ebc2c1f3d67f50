"""The safe ways every role writes: folders 0700, files 0600, whole-file replacement and
fsync'd appends.

atomic_write replaces a file whole (a temporary file in the same folder, fsync, rename, fsync the
folder): a crash leaves the old file or the new one, never half. append_bytes and append_line add
to a journal and fsync before returning. ensure_dir makes every folder it creates 0700, parents
included (os.makedirs gives parents the umask's mode).
"""

import os
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_dir(path: str | os.PathLike) -> None:
    """Create a folder and any missing parents, each 0700, and set 0700 on the folder itself."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        os.chmod(folder, DIR_MODE)
    os.chmod(path, DIR_MODE)


def fsync_dir(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(folder: Path, name: str, data: bytes) -> str:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Replace path with data, whole or not at all."""
    path = Path(path)
    tmp = _write_temp(path.parent, path.name, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def create_if_missing(path: str | os.PathLike, data: bytes = b"") -> bool:
    """Create path with data unless it exists; never overwrite. True when it was created."""
    path = Path(path)
    if path.exists():
        return False
    tmp = _write_temp(path.parent, path.name, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    fsync_dir(path.parent)
    return True


def append_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Append data to path (created 0600 if missing) and fsync before returning."""
    new = not os.path.exists(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    if new:
        fsync_dir(Path(path).parent)


def append_line(path: str | os.PathLike, line: str) -> None:
    """Append one line (a newline is added) to a journal, fsync'd."""
    append_bytes(path, (line + "\n").encode("utf-8"))
