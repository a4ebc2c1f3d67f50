"""Stored vectors that are not vectors (a damaged index, or one edited by hand), found where the
table is read and given back to the embedder to compute again.

int8.unpack reads such a value (another length, NULL, text, a float32 vector holding a NaN) as a
row of zeros, which is near nothing, so recall goes on and finds the row by its words. The
readers that go through the whole table (the exact matrix as it loads, the ANN as it builds) note
the rowids here; the embedder thread, which writes, takes them and, in one transaction, checks
that each is still unreadable, deletes it, puts its row back on the pending list and raises
recall_mode.generation (so the matrix and the ANN read the table again, without the zeros); then
it embeds those rows as any other, and logs one line naming the index and how many.
"""

import sqlite3
import threading
from collections.abc import Iterable

from memoryd.modes import hybrid_tables
from memoryd.modes.int8 import unpack, unreadable

# Rowids held between two takes, at most: the rest are found again at the next read.
MOST = 10_000


class Damaged:
    """The rowids whose stored vector could not be read, until the embedder takes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rowids: set[int] = set()

    def note(self, rowids: Iterable[int]) -> None:
        with self._lock:
            for rowid in rowids:
                if len(self._rowids) >= MOST:
                    break
                self._rowids.add(int(rowid))

    def take(self) -> list[int]:
        with self._lock:
            taken, self._rowids = sorted(self._rowids), set()
        return taken


def embed_again(conn: sqlite3.Connection, rowids: list[int]) -> int:
    """Inside conn's write transaction: delete the vectors of rowids that are still unreadable
    and put their rows (those that still exist) back on the pending list; returns how many
    vectors were deleted."""
    deleted = 0
    for rowid in rowids:
        row = conn.execute("SELECT vector FROM vectors WHERE rowid = ?", (rowid,)).fetchone()
        if row is None or not len(unreadable(unpack([row[0]]))):
            continue  # gone, or written again meanwhile
        conn.execute("DELETE FROM vectors WHERE rowid = ?", (rowid,))
        conn.execute(
            "INSERT OR IGNORE INTO vector_pending SELECT rowid FROM sources WHERE rowid = ?",
            (rowid,),
        )
        deleted += 1
    if deleted:
        conn.execute(hybrid_tables.RAISE_GENERATION)
    return deleted
