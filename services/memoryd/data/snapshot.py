"""A consistent picture of memoryd's files, taken on the writer thread between two writes.

Taking it costs one open and one fstat per file: no byte is copied while the writer waits. Every
file is held by an open descriptor with the length it had, so what is read later, off the writer,
is exactly what the files held then: memoryd appends to the journal, notes.md, the recall logs and
forgotten.jsonl (bytes past the noted length are left out) and replaces the other files by rename
(the descriptor keeps the old inode). The recall log is appended by readers too, so each
append-only file is cut back to its last whole line when it is read.
"""

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import layout
from memoryd.home import Home, open_file

APPEND_ONLY = ("notes.md", "forgotten.jsonl", "edits/", "recalls/", "sessions/")


@dataclass
class Held:
    name: str  # as in the archive: memory/notes.md
    fd: int
    size: int

    def chunks(self, size: int = 1 << 20):
        """The file's bytes as they were when held, in chunks."""
        offset = 0
        while offset < self.size:
            data = os.pread(self.fd, min(size, self.size - offset), offset)
            if not data:
                raise OSError(f"{self.name} became shorter while it was read")
            offset += len(data)
            yield data


@dataclass
class Snapshot:
    files: list[Held] = field(default_factory=list)
    waited: float = 0.0  # seconds the writer spent taking it

    def close(self) -> None:
        for held in self.files:
            try:
                os.close(held.fd)
            except OSError:
                pass
        self.files = []


def _whole_lines(fd: int, size: int) -> int:
    """size cut back to just after the last newline at or before it."""
    start = size
    while start > 0:
        step = min(65_536, start)
        data = os.pread(fd, step, start - step)
        cut = data.rfind(b"\n")
        if cut != -1:
            return start - step + cut + 1
        start -= step
    return 0


def _hold(name: str, path: Path) -> Held | None:
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    size = os.fstat(fd).st_size
    if any(part in name for part in APPEND_ONLY) and size:
        last = os.pread(fd, 1, size - 1)
        if last != b"\n":
            size = _whole_lines(fd, size)
    return Held(name, fd, size)


def take(home: Home) -> Snapshot:
    """Hold every memoryd file; run it on the writer thread."""
    started = time.monotonic()
    snap = Snapshot()
    _add(snap, layout.memory_files(home))
    snap.waited = time.monotonic() - started
    return snap


def of_files(listed: list[tuple[str, Path]]) -> Snapshot:
    """Hold the files listed as (name in the archive, path): a restore's staged files, counted as
    a backup counts the home's."""
    snap = Snapshot()
    _add(snap, listed)
    return snap


def add_sessions(snap: Snapshot, home: Home) -> None:
    """Hold the session logs recall reads too. Off the writer: loopd appends them, not memoryd,
    so no write of memoryd's can land half in them; each is cut to its last whole record."""
    _add(snap, layout.session_files(home))


def _add(snap: Snapshot, listed: list[tuple[str, Path]]) -> None:
    try:
        for name, path in listed:
            held = _hold(name, path)
            if held is not None:
                snap.files.append(held)
    except BaseException:
        snap.close()
        raise
