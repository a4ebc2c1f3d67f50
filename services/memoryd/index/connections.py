"""The connections to the index file: the writer's, and a small pool of readers (spec 6).

One writer thread changes the index, serialised on the writer's connection, each change in a
transaction that is rolled back, not committed, when it changed nothing; recall runs on any other
thread, each call on a read connection taken from the pool. The file is in WAL mode, so readers
never wait for the writer. Every reader is held under the swap gate, so that a reindex's swap
(index.py) waits for the recalls in flight and they wait only for the swap; a damaged file met by
a reader is reported as IndexDamaged, in one line, and a full disk or another error of the disk or
of access as IndexUnwritable, saying what is wrong (dbfile.py).
"""

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from memoryd.errors import IndexDamaged
from memoryd.index.dbfile import Gate, refusal
from memoryd.index.samefile import OpenedFile
from memoryd.index.walowed import WalOwed
from memoryd.search import generation

# Logged under the index's name, as before the connections had a module of their own.
log = logging.getLogger("memoryd.index.index")

# The most the WAL file keeps between transactions (journal_size_limit).
WAL_KEPT_BYTES = 64 << 20

# Every page a write frees (a row deleted, a table dropped, a b-tree's cells moved) is zeroed, so
# that no old copy of what a forget took stays in the file's free pages. Debian's SQLite has it
# on by default; a Python built elsewhere may carry a SQLite that has it off.
ZERO_FREED_PAGES = "PRAGMA secure_delete = ON"

UNOPENED = (
    "the memory index index/memory.sqlite3 cannot be opened (memoryd's log says why; runbook:"
    " memory-index-damaged)"
)


class Connections:
    """The writer's connection and the readers' pool of the index file at path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._gate = Gate()
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        # The file the connections are to; recall refuses once the path names another or none.
        self._opened = OpenedFile(path)
        # Whether the WAL still holds old copies of rows a forget took (walowed.py).
        self.wal_owed = WalOwed(path)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(ZERO_FREED_PAGES)
        # A WAL file keeps the size its largest transaction gave it (a mode's tables built, a
        # forget's purge: a gigabyte at a million records) until memoryd stops; cut back to this
        # once a checkpoint has emptied it.
        conn.execute(f"PRAGMA journal_size_limit = {int(WAL_KEPT_BYTES)}")
        self._opened.opened()
        self.wal_owed.opened(conn)
        return conn

    def _write(self) -> sqlite3.Connection:
        if self._writer is None:
            raise IndexDamaged("the memory index is not open")
        return self._writer

    def _write_same(self) -> sqlite3.Connection:
        """The writer's connection, to add rows with: IndexDamaged (GONE) once the path names
        another file or none, as recall is refused, so that nothing is indexed into a removed
        file no reader opens again (the reindex the refusal asks for indexes it all)."""
        self._opened.check()
        return self._write()

    def dropped(self, reason: str) -> None:
        """memoryd removed the file itself, for reason: said so until a rebuild opens another."""
        self._opened.dropped = reason

    def gone(self) -> str | None:
        """What stands at the path instead of the file the connections are to (samefile.py),
        or None while it is that file. Looked under the swap gate, as a reader looks: during a
        reindex's swap the path names the new file before the connections are opened to it, and
        that is memoryd's own swap, not a file replaced while it ran. Never called from inside
        a reader or the swap (the gate is not reentrant)."""
        with self._gate.shared():
            return self._opened.what()

    @contextlib.contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        # A transaction that changed nothing is rolled back (no commit, no fsync); total_changes
        # does not count schema changes (a recall mode's tables), schema_version does.
        changes = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        schema = conn.execute("PRAGMA schema_version").fetchone()[0]
        mark = generation.begin(conn)
        try:
            yield conn
            changed = conn.total_changes != changes
            if not changed:
                changed = conn.execute("PRAGMA schema_version").fetchone()[0] != schema
            if changed or not mark.own:  # not own: another program wrote, or no record yet
                generation.seal(conn, mark)  # what recall's cached term counts are keyed to
                changed = True
            conn.execute("COMMIT" if changed else "ROLLBACK")
        except BaseException:
            _roll_back(conn)
            raise
        if conn is self._writer:
            self.wal_owed.after_write(conn)

    def _close_all(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _take(self) -> sqlite3.Connection:
        with self._pool_lock:
            if self._pool:
                return self._pool.pop()
        if self._writer is None:
            raise IndexDamaged("the memory index is not open")
        try:
            conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30
            )
        except sqlite3.Error as error:  # its folder unreadable, say: named, in one line
            log.error("index %s: cannot open it to read: %s", self.path, error)
            raise IndexDamaged(UNOPENED) from None
        try:
            conn.execute("PRAGMA query_only = 1")
        except sqlite3.Error as error:
            conn.close()
            log.error("index %s: cannot open it to read: %s", self.path, error)
            raise IndexDamaged(UNOPENED) from None
        return conn

    def _give(self, conn: sqlite3.Connection) -> None:
        with self._pool_lock:
            self._pool.append(conn)

    @contextlib.contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """A read connection from the pool, held under the swap gate (a reindex's swap waits for
        it) and given back after. A sqlite3.DatabaseError inside becomes IndexDamaged (logged,
        the connection closed, never given back)."""
        with self._gate.shared():
            self._opened.check()
            conn = self._take()
            try:
                yield conn
            except sqlite3.DatabaseError as error:
                conn.close()
                log.error("index %s: recall failed: %s", self.path, error)
                raise refusal(
                    error,
                    self.path,
                    lambda wrong, when: (
                        f"the memory index cannot be read now: {wrong}; nothing"
                        f" in it is lost: recall answers {when}"
                    ),
                ) from None
            except BaseException:
                conn.close()
                raise
            self._give(conn)

    @contextlib.contextmanager
    def _embedding_connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for a recall mode's background work (hybrid's embedder), held under
        the gate."""
        with self._gate.shared():
            if self._writer is None:
                raise sqlite3.OperationalError("the memory index is not open")
            # A connect at a removed path would make an empty file there for it.
            self._opened.check()
            conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30
            )
            try:
                conn.execute(ZERO_FREED_PAGES)  # the embedder's inserts move cells too
                yield conn
            finally:
                conn.close()


def _roll_back(conn: sqlite3.Connection) -> None:
    """Roll back what is left of a failed transaction. SQLite rolls it back itself on some errors
    (a full disk, an I/O error), and a ROLLBACK would then fail: the error raised is always the
    first one, which says what went wrong, never the ROLLBACK's."""
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error as error:
        log.warning("index: a ROLLBACK after a failed change failed too: %s", error)
