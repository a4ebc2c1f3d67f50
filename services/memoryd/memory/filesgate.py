"""The gate between memory.md and user.md changing and a memory block being built from them.

A write renames its file into place before it is journalled, and puts the old one back when the
journal cannot take the line; a restore lays its files one rename at a time. A block built in
between would freeze into a session's prompt a write answered "not applied", or one file
restored beside the other not yet. So whatever changes the files holds the gate from the first
rename until the change stands or is taken back, and a block is built only while nobody does.

Inside memoryd a lock does it. memory-mcp builds the block from the files itself, in its own
process, so the gate is also an flock on the memory/ folder: exclusive while memoryd changes
the files, shared while memory-mcp reads them (shared_read). memoryd never waits on another
process for longer than FLOCK_PATIENCE (a block's read takes milliseconds): a reader that holds
the folder's lock and hangs (stopped, or on a stalled disk) costs a write that much, and the write
goes on without the flock (logged).
"""

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

FLOCK_PATIENCE = 0.25


class FilesGate:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def changing(self) -> Iterator[None]:
        """Held while the files may hold what is yet to stand (memoryd's writer)."""
        with self._lock:
            fd = _folder_fd(self.folder)
            try:
                if fd is not None:
                    _lock_within(fd, self.folder)
                yield
            finally:
                if fd is not None:
                    os.close(fd)  # the flock goes with the descriptor

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Held while memoryd builds a block."""
        with self._lock:
            yield


@contextlib.contextmanager
def shared_read(folder: Path) -> Iterator[None]:
    """Held while another process (memory-mcp) builds a block from the files in folder: it
    waits for a change of memoryd's to stand or be taken back."""
    fd = _folder_fd(folder)
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _folder_fd(folder: Path) -> int | None:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None  # no folder to lock: the files' own reads say what is wrong


def _lock_within(fd: int, folder: Path) -> None:
    deadline = time.monotonic() + FLOCK_PATIENCE
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                log.warning(
                    "%s: another process has held its lock for %g s (a memory-mcp reading the"
                    " block?); the write goes on without waiting longer",
                    folder,
                    FLOCK_PATIENCE,
                )
                return
            time.sleep(0.005)
        except OSError:
            return  # a file system without flock: the in-process lock still holds
