"""A role's log file that stays bounded when the role runs as a plain process.

Under containers podman keeps each role's log and cuts it at a size (compose.yaml, logging).
Without containers, scripts/stack points a role's stdout and stderr at .local/stack/ROLE.log, and
a role logs one line per refused request: a peer sending bad frames for a month would grow that
file without end. So when BOXMAKER_LOG_FILE names that file, the role keeps what its stderr
writes to bounded by BOXMAKER_LOG_MAX_BYTES (default MAX_BYTES), whatever happens to the file:

- full: it is moved aside to FILE.1 (replacing the one before; a link there is replaced, never
  written through) and stdout and stderr go to a new FILE, made 0600 and never through a link;
- removed, or replaced by another regular file (the owner's own rotation): within a second the
  role writes to the file at FILE again, made anew if need be, as logging's WatchedFileHandler
  does, so the space of a removed one is given back;
- when it cannot be moved (FILE.1 a folder, FILE a link, no room for a new file): the full file
  the role writes to is cut back to empty in place, which needs no room. Lines are lost then,
  never the disk; the first such trouble of each kind is said once, in the log itself.

A traceback written to stderr lands in the same file. The role's child processes (the index
rebuild, the embedder, which lives as long as memoryd) inherit its stderr and the variable: they
follow the file at FILE as the role does, before their next line (their stderr only: a child's
stdout may be its pipe to the role), and never move or cut anything. A child that writes nothing
keeps the file it started with open until it does, or ends: 10 MB at most, not given back.
"""

import logging
import os
import stat
import sys
import time

FILE_ENV = "BOXMAKER_LOG_FILE"
MAX_ENV = "BOXMAKER_LOG_MAX_BYTES"
MAX_BYTES = 10 * 1024 * 1024
LEAST_BYTES = 4096  # a smaller bound would move the file at nearly every line
LOOK_SECONDS = 1.0  # how often the file at the path is compared with the one written to


class RotatingStderr(logging.StreamHandler):
    """A StreamHandler on sys.stderr keeping the file at path bounded (see the module)."""

    def __init__(self, path: str, max_bytes: int, moves: bool = True):
        super().__init__(sys.stderr)
        self.path = path
        self.max_bytes = max(max_bytes, LEAST_BYTES)
        self.moves = moves  # False: a child of the role, which only follows the file
        self._fds = (1, 2) if moves else (2,)
        self._next_look = 0.0
        self._said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if time.monotonic() >= self._next_look:  # before the line: it goes where it should
                self._next_look = time.monotonic() + LOOK_SECONDS
                self._follow(os.fstat(2))
            super().emit(record)
            if self.moves and (here := os.fstat(2)).st_size >= self.max_bytes:
                self._full(here)
        except OSError as e:  # never fail a log line for it
            self._say("stat", f"cannot be watched: {e.strerror}")

    def _at_path(self) -> os.stat_result | None:
        try:
            return os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _follow(self, here: os.stat_result) -> None:
        """Write to the file at path again when it was removed or replaced by another."""
        there = self._at_path()
        if there is None or (
            stat.S_ISREG(there.st_mode)
            and (there.st_dev, there.st_ino) != (here.st_dev, here.st_ino)
        ):
            self._reopen()

    def _full(self, here: os.stat_result) -> None:
        there = self._at_path()
        if (
            there is not None
            and (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino)
            and stat.S_ISREG(there.st_mode)
        ):
            try:
                os.replace(self.path, f"{self.path}.1")
            except OSError as e:
                self._cut(f"{self.path}.1: {e.strerror}")
                return
            if not self._reopen():
                self._cut("no new file could be made")
            return
        if (there is None or stat.S_ISREG(there.st_mode)) and self._reopen():
            return  # removed or replaced meanwhile: the file at path now
        self._cut("it is not a regular file" if there is not None else "no new file could be made")

    def _reopen(self) -> bool:
        """stdout and stderr to the regular file at path, made 0600 if missing; False when that
        cannot be done (a link or a FIFO there, no room), said once."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags | os.O_CLOEXEC, 0o600)
        except OSError as e:
            self._say("open", f"cannot be opened: {e.strerror}")
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self._say("open", "is not a regular file")
                return False
            os.set_blocking(fd, True)
            if 1 in self._fds:
                sys.stdout.flush()
            self.stream.flush()
            for target in self._fds:
                os.dup2(fd, target, inheritable=True)
        finally:
            os.close(fd)
        return True

    def _cut(self, why: str) -> None:
        """The full file written to, cut back to empty in place: bounded, needing no room."""
        self.stream.flush()
        os.ftruncate(2, 0)
        self._say("cut", f"not moved aside ({why}): cut to empty instead")

    def _say(self, kind: str, what: str) -> None:
        if kind in self._said:
            return
        self._said.add(kind)
        self.stream.write(f"log file {self.path} {what}\n")
        self.stream.flush()


def handler_from_env(environ=os.environ, moves: bool = True) -> logging.Handler | None:
    """The handler BOXMAKER_LOG_FILE asks for, or None (log to stderr as it is); moves: the
    role's own, which keeps the file bounded (a child's only follows it)."""
    path = environ.get(FILE_ENV, "")
    if not path:
        return None
    try:
        max_bytes = int(environ.get(MAX_ENV, "") or MAX_BYTES)
    except ValueError:
        max_bytes = MAX_BYTES
    return RotatingStderr(path, max_bytes, moves)
