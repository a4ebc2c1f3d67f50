"""The layout of {home} as memoryd sees it, and the two safe ways to write a file.

atomic_write replaces a file whole: a temporary file in the same folder, fsync, rename, fsync the
folder; a crash leaves the old file or the new one, never half. append_line adds one line to a
journal and fsyncs it. Folders are 0700, files 0600 (spec 3, 6).
"""

import datetime as dt
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def index_db(self) -> Path:
        return self.index_dir / "memory.sqlite3"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def run(self) -> Path:
        return self.root / "run"

    def memory_file(self, name: str) -> Path:
        """soul.md, memory.md, user.md, notes.md or pending.jsonl."""
        return self.memory / name

    @property
    def edits(self) -> Path:
        return self.memory / "edits"

    @property
    def recalls(self) -> Path:
        return self.memory / "recalls"

    def edits_month(self, when: dt.datetime) -> Path:
        return self.edits / f"{when:%Y-%m}.jsonl"

    def recalls_month(self, when: dt.datetime) -> Path:
        return self.recalls / f"{when:%Y-%m}.jsonl"

    def session_log(self, session: str) -> Path:
        """The log of a session whose id the caller has already validated."""
        return self.sessions / session / "0.jsonl"


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
    """Replace path with data, whole or not at all."""
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


def create_if_missing(path: Path, data: bytes) -> bool:
    """Create path with data unless it exists; never overwrite. True when it was created."""
    if path.exists():
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    fsync_dir(path.parent)
    return True


def append_bytes(path: Path, data: bytes) -> None:
    """Append data to path (created 0600 if missing) and fsync before returning."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


def append_line(path: Path, line: str) -> None:
    """Append one line (a newline is added) to a journal, fsync'd."""
    new = not path.exists()
    append_bytes(path, (line + "\n").encode("utf-8"))
    if new:
        fsync_dir(path.parent)
