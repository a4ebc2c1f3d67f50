"""Emptying the index's WAL file after a forget, and owing that when a reader keeps it full.

A forget's delete leaves the old page images of the rows it took in index/memory.sqlite3-wal until
a checkpoint has copied every frame back and truncated the file. A read that holds a snapshot
(another program reading the index with SQLite, or a long recall) keeps SQLite from doing so:
`wal_checkpoint(TRUNCATE)` then waits the connection's busy timeout (30 s) and answers busy,
raising nothing, and the checkpoints SQLite makes by itself later never truncate, so the old
frames past what is written again keep the text.

So the forget's checkpoints wait at most TRY_MS for reads to end, read SQLite's answer and the
file's size, and, when the file was not emptied, mark the truncation owed, durably (a file beside
the index, as the merge's mark), which the forget's answer then names (said). The writer tries
again, without waiting, after each of its transactions, and at each open of the index (a start, a
reindex's swap), until it is done; try_owed is that try as a job of its own, which a timer makes
(walretry.py) for when the read ends while nothing writes.

That the WAL holds old frames (owed) and that the mark could not be removed once it was emptied
(stale: a mark made a folder by hand) are two things: a forget's answer speaks of the first only,
the second is logged once and not tried again while memoryd runs (the start's look at the index
folder names it then).
"""

import logging
import os
import sqlite3
import time
from pathlib import Path

from memoryd.home import fsync_dir

log = logging.getLogger("memoryd.index.index")

OWED_SUFFIX = ".wal-owed"
TRY_MS = 250  # the forget's checkpoints: a recall in flight ends within it, a held read does not


class WalOwed:
    """Whether the truncation of the WAL of the index at path is owed, and its tries."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.mark = self.path.with_name(self.path.name + OWED_SUFFIX)
        self.wal = self.path.with_name(self.path.name + "-wal")
        self.owed = False  # read off the mark at each open
        self.stale = False  # the WAL was emptied, but the mark could not be removed
        self.since: float | None = None  # when the truncation was first owed (time.time())
        # Set when a timer tries it as a writer job of its own every so many seconds (walretry.py)
        self.retried_every: float | None = None

    def opened(self, conn: sqlite3.Connection) -> None:
        """At an open of the index: the truncation a mark says is owed, tried now."""
        self.owed = self.mark.exists() and not self.stale
        if self.owed:
            self.since = _mtime(self.mark)
            self.truncate(conn, wait_ms=0)

    def after_write(self, conn: sqlite3.Connection) -> None:
        """After a writer transaction: the truncation owed, tried without waiting (about 15 µs
        while a read still holds the file)."""
        if self.owed:
            self.truncate(conn, wait_ms=0)

    def try_owed(self, conn: sqlite3.Connection) -> bool:
        """A writer job of its own: the truncation owed tried without waiting; whether it is
        still owed."""
        if self.owed:
            self.truncate(conn, wait_ms=0)
        return self.owed

    def truncate(self, conn: sqlite3.Connection, wait_ms: int = TRY_MS) -> bool:
        """Checkpoint the WAL and truncate it, waiting at most wait_ms for reads to end; whether
        it is empty now. Not emptied, the truncation is owed (marked); emptied, it is not."""
        said = None
        busy = 1
        try:
            kept = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
            conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
            try:
                busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                busy = busy or int(frames != copied)
            finally:
                conn.execute(f"PRAGMA busy_timeout = {kept}")
        except sqlite3.Error as error:
            said = str(error)
        size = _size(self.wal)
        if not busy and said is None and not size:
            self._done()
            return True
        self._owe(said or f"{size:,} bytes kept: a read of the index holds it")
        return False

    def said(self) -> str | None:
        """What a forget's answer says of the WAL while its truncation is owed, else None."""
        if not self.owed:
            return None
        when = "at its first write after that"
        if self.retried_every is not None:
            when = f"within {self.retried_every:.0f} s after that"
        return (
            f"Old copies of the index's pages that held it stay in {self.wal} until the reads"
            " of the index open now end (another program reading it with SQLite, such as"
            f" sqlite3, keeps one open): memoryd empties that file {when}, or at its next start."
        )

    def _owe(self, why: str) -> None:
        if self.owed:
            return
        self.owed = True
        self.since = time.time()
        try:
            fd = os.open(self.mark, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            os.close(fd)
            fsync_dir(self.mark.parent)
        except OSError as e:  # owed all the same while memoryd runs
            log.warning("%s: cannot be made: %s", self.mark, e.strerror or e)
        log.warning("%s: not emptied (%s); memoryd empties it once the read ends", self.wal, why)

    def _done(self) -> None:
        if not self.owed:
            return
        self.owed = False
        try:
            self.mark.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            # The WAL is empty all the same: only the mark is left, said once and not tried
            # again (each writer transaction and timer tick would say it anew).
            if not self.stale:
                log.warning(
                    "%s: cannot be removed: %s; %s was emptied all the same",
                    self.mark,
                    e.strerror or e,
                    self.wal,
                )
            self.stale = True
            self.since = None
            return
        try:
            fsync_dir(self.mark.parent)
        except OSError as e:  # a crash may bring the mark back: one more try at the start
            log.warning("%s: removed, but its folder cannot be synced: %s", self.mark, e.strerror)
        waited = "" if self.since is None else f" after {time.time() - self.since:.0f} s"
        log.info("%s: emptied%s, so no old copy of a forgotten row stays in it", self.wal, waited)
        self.since = None


def _size(path: Path) -> int:
    """The file's size; 1 when it cannot be looked at (not known to be empty)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
    except OSError:
        return 1


def _mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None
