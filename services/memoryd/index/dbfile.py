"""The index file's own helpers: create it 0600, remove it with its WAL, tell whether it is damaged
(and what it was built with), check FTS5, and the gate between recalls and a swap.
"""

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from memoryd.errors import StartFailed
from memoryd.home import FILE_MODE
from memoryd.index import indexer


class Gate:
    """Many recalls at once, or one swap: a small readers-writer lock that favours the swap."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._swapping = False

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._swapping)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._swapping)
            self._swapping = True
            self._cond.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            with self._cond:
                self._swapping = False
                self._cond.notify_all()


def create_file(path: Path) -> None:
    """Create an empty file 0600, so SQLite (and its -wal and -shm, which copy the mode) use it."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    os.chmod(path, FILE_MODE)


def remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def damage(path: Path) -> tuple[str | None, dict[str, str] | None]:
    """Why the index at path cannot be used as it is (None when it can), and its stamp."""
    try:
        conn = sqlite3.connect(path)
        try:
            problem = indexer.schema_problem(conn)
            if problem is None:
                (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
                problem = None if verdict == "ok" else f"quick_check: {verdict}"
            return problem, indexer.read_stamp(conn)
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:
        return str(error), None


def check_fts5() -> None:
    """Refuse to start without FTS5 in the standard library's SQLite (design section 1)."""
    try:
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        conn.close()
    except sqlite3.OperationalError as error:
        raise StartFailed(f"SQLite {sqlite3.sqlite_version} has no FTS5 ({error})") from None
