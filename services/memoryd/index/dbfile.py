"""The index file's own helpers: create it 0600, remove it with its WAL, tell whether it is damaged
(and what it was built with), check FTS5, and the gate between recalls and a swap.

Only a file SQLite calls corrupt or not a database, or one that fails quick_check or has other
tables, is damaged: it is disposable, so it is deleted and rebuilt. Any other error (a full disk,
an I/O error, a permission, a lock) says nothing of the file: it is left as it is, and what failed
is refused in one line saying what is wrong (unwritable), to be tried again once that is mended.
SQLite's error codes tell them apart, never its messages.

Removing and replacing are for memoryd's own files only: a folder, link or FIFO at the index's
path or beside it (its -wal, -shm or -journal, the new file a reindex builds, the kept vectors) is
not one of them, and a reindex that would have to remove it refuses in one line naming it
(in_the_way), as a start refuses it, leaving it for the owner to move.
"""

import contextlib
import logging
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from memoryd.errors import AdminRefused, IndexDamaged, IndexUnwritable, StartFailed
from memoryd.home import FILE_MODE, NotRegular, check_entry
from memoryd.index import carryfile, indexer

log = logging.getLogger("memoryd.index.index")

DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
# Errors of the disk or of access, not of the file: (what is wrong, when it is mended).
UNWRITABLE = {
    sqlite3.SQLITE_FULL: ("the disk is full", "once there is room"),
    sqlite3.SQLITE_IOERR: ("a disk I/O error", "once the disk is sound"),
    sqlite3.SQLITE_READONLY: ("it or its folder is read-only", "once it can be written"),
    sqlite3.SQLITE_PERM: ("permission denied", "once it can be written"),
    sqlite3.SQLITE_CANTOPEN: (
        "SQLite cannot open it or its -wal or -shm file",
        "once it can be opened",
    ),
    sqlite3.SQLITE_BUSY: ("another program holds it locked", "once that program lets go"),
    sqlite3.SQLITE_LOCKED: ("another program holds it locked", "once that program lets go"),
}
# Less free space than this beside the file: an I/O error is taken for a full disk (SQLite says
# "disk I/O error" when it cannot grow its -shm file on a full disk).
LOW_SPACE = 1 << 20


def _primary(error: BaseException) -> int | None:
    """SQLite's primary result code of error (None: not an error SQLite gave)."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


DAMAGED = (
    "the memory index is damaged; rebuild it with bxctl reindex (runbook: memory-index-damaged)"
)


def is_damage(error: BaseException) -> bool:
    """Whether SQLite called the file corrupt or not a database."""
    return _primary(error) in DAMAGE_CODES


def unwritable(error: BaseException, path: Path) -> tuple[str, str] | None:
    """(what is wrong, when it is mended) when error is one of the disk or of access rather
    than of the file at path (a full disk, an I/O error, a permission, a lock), else None."""
    code = _primary(error)
    if code not in UNWRITABLE:
        return None
    if code == sqlite3.SQLITE_IOERR and _low_space(path):
        code = sqlite3.SQLITE_FULL
    return UNWRITABLE[code]


def refusal(
    error: BaseException, path: Path, saying: Callable[[str, str], str]
) -> IndexDamaged | IndexUnwritable:
    """What an SQLite error met on the index file at path answers: IndexUnwritable, in the
    words saying(what is wrong, when it is mended) gives, when the disk or access is at fault;
    IndexDamaged (DAMAGED) when the file is."""
    wrong = unwritable(error, path)
    if wrong is not None:
        return IndexUnwritable(saying(*wrong))
    return IndexDamaged(DAMAGED)


def _low_space(path: Path) -> bool:
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < LOW_SPACE


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


SQLITE_BESIDE = ("", "-wal", "-shm", "-journal")

# The temporary file proto.files.atomic_write makes for the merge mark (data/ftsmerge.py) beside
# the index: a kill between its write and its rename leaves it, empty, and nothing reads it.
OWN_TEMP = re.compile(r"\A\.memory\.sqlite3\.merge-owed\.[0-9a-f]{12}\.tmp\Z")


def remove_own_temps(folder: Path) -> None:
    """Remove the temporary files of memoryd's own atomic writes in the index's folder, left by a
    kill before their rename (the real file is whole, old or new), each logged; any other name,
    or anything but a regular file, is left as it is."""
    with contextlib.suppress(FileNotFoundError):
        names = sorted(name for name in os.listdir(folder) if OWN_TEMP.match(name))
        for name in names:
            path = folder / name
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                os.unlink(path)
                log.info("%s: removed a temporary file left by a crash", path)
            except FileNotFoundError:
                continue
            except OSError as e:
                log.warning("%s: cannot remove a leftover temporary file: %s", path, e.strerror)


def in_the_way(path: Path) -> None:
    """AdminRefused, logged, when anything but a regular file stands where a reindex of the index
    at path removes or replaces one: a folder there is not memoryd's to delete, and the rename
    over it would fail half way."""
    new = path.with_name(path.name + ".new")
    for base in (path, new, carryfile.carry_path(path)):
        for suffix in SQLITE_BESIDE:
            try:
                check_entry(f"{base}{suffix}")
            except NotRegular as e:
                log.warning("index %s: the reindex is refused: %s; it is left as it is", path, e)
                raise AdminRefused(
                    f"refused: {e}, which memoryd did not make and does not remove: move it"
                    " away, then run bxctl reindex again (the index is as it was)"
                ) from None
            except OSError as e:  # its folder unreadable, say
                log.warning("index %s: the reindex is refused: %s", path, e)
                raise AdminRefused(
                    f"refused: cannot look at {e.filename}: {e.strerror}; the index is as it was"
                ) from None


def damage(path: Path) -> tuple[str | None, dict[str, str] | None]:
    """Why the index at path cannot be used as it is (None when it can), and its stamp.
    StartFailed, the file left as it is, for any error that is not damage (a full disk...)."""
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
        if is_damage(error):
            return str(error), None
        cause, when = unwritable(error, path) or (str(error), "once that is mended")
        raise StartFailed(
            f"cannot open the index {path}: {cause}; it is left as it is (nothing removed):"
            f" start memoryd again {when}"
        ) from None


def check_fts5() -> None:
    """Refuse to start without FTS5 in the standard library's SQLite (design section 1)."""
    try:
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        conn.close()
    except sqlite3.OperationalError as error:
        raise StartFailed(f"SQLite {sqlite3.sqlite_version} has no FTS5 ({error})") from None
