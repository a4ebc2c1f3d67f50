"""A role's log file that stays bounded when the role runs as a plain process.

Under containers podman keeps each role's log and cuts it at a size (compose.yaml, logging).
Without containers, scripts/stack points a role's stdout and stderr at .local/stack/ROLE.log, and
a role logs one line per refused request: a peer sending bad frames for a month would grow that
file without end. So when BOXMAKER_LOG_FILE names the file the role's stderr writes to, the role
moves it aside to FILE.1 (replacing the one before) once it holds BOXMAKER_LOG_MAX_BYTES (default
MAX_BYTES), and points its stdout and stderr at a new FILE: at most two such files, the latest
lines always in FILE, and a traceback written to stderr lands with them.

Nothing is moved unless stderr is that very file (its device and inode): a role started by hand
with the variable set but its stderr elsewhere logs as before, and a file someone replaced under
the role is left alone. Only the role itself moves it: its child processes (the index rebuild,
the embedder) inherit its stderr and write through it, and never rename.
"""

import logging
import os
import sys

FILE_ENV = "BOXMAKER_LOG_FILE"
MAX_ENV = "BOXMAKER_LOG_MAX_BYTES"
MAX_BYTES = 10 * 1024 * 1024
LEAST_BYTES = 4096  # a smaller bound would move the file at nearly every line


class RotatingStderr(logging.StreamHandler):
    """A StreamHandler on sys.stderr that moves path aside past max_bytes (see the module)."""

    def __init__(self, path: str, max_bytes: int):
        super().__init__(sys.stderr)
        self.path: str | None = path
        self.max_bytes = max(max_bytes, LEAST_BYTES)

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        if self.path is None:
            return
        try:
            if os.fstat(2).st_size >= self.max_bytes:
                self._rotate(self.path)
        except OSError as e:  # never fail a log line for it: keep writing where stderr is
            path, self.path = self.path, None
            self.stream.write(f"log file {path}: not moved aside any more: {e.strerror}\n")

    def _rotate(self, path: str) -> None:
        here = os.fstat(2)
        there = os.stat(path, follow_symlinks=False)
        if (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino):
            self.path = None  # stderr is not that file (any more): not ours to move
            return
        sys.stdout.flush()
        self.stream.flush()
        os.replace(path, f"{path}.1")
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
        try:
            os.dup2(fd, 1, inheritable=True)
            os.dup2(fd, 2, inheritable=True)
        finally:
            os.close(fd)


def handler_from_env(environ=os.environ) -> logging.Handler | None:
    """The rotating handler BOXMAKER_LOG_FILE asks for, or None (log to stderr as it is)."""
    path = environ.get(FILE_ENV, "")
    if not path:
        return None
    try:
        max_bytes = int(environ.get(MAX_ENV, "") or MAX_BYTES)
    except ValueError:
        max_bytes = MAX_BYTES
    return RotatingStderr(path, max_bytes)
