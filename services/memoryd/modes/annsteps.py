"""The rows the embedder wrote below the vectors the ANN (ann.py) already holds, by the raise of
recall_mode.generation each write made: the ANN adds them rather than building anew.

After a reindex or an upgrade's rebuild mid-pass, the vectors carried over (the notes', indexed
first and so embedded first) lie above every row still pending, so every batch the embedder writes
lies below them and raises the generation (embedbatch.py): readers cannot tell those rows from
what lies above their highest rowid. Built anew for each raise, the ANN re-read and re-encoded the
whole table after every batch for the rest of the pass. A raise the embedder told of is only rows
added, which the ANN adds; any other (a delete took the highest rowid, so a rowid may hold another
row now) still means a build.
"""

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator

# The most raises kept that the ANN has not taken yet (before its first build it takes none):
# past it the oldest is dropped, and a change of generation it explained is built for.
MOST = 4_096
# Rowids in one read (SQLite's bound parameters).
PART = 900

Connect = Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]


class Steps:
    """generation -> the rowids whose vectors were written in the transaction that raised the
    generation to it (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[int, list[int]] = {}

    def told(self, generation: int, rowids: list[int] | None) -> None:
        """The raise to generation wrote rowids; None: its transaction was rolled back."""
        with self._lock:
            if rowids is None:
                self._rows.pop(generation, None)
                return
            self._rows[generation] = list(rowids)
            while len(self._rows) > MOST:
                del self._rows[next(iter(self._rows))]

    def take(self, held: int, now: int) -> list[int] | None:
        """The rowids written from generation held to now, taken off; None (nothing taken)
        when a raise between was not told of."""
        with self._lock:
            wanted = range(held + 1, now + 1)
            if now < held or any(g not in self._rows for g in wanted):
                return None
            return [r for g in wanted for r in self._rows.pop(g)]

    def drop(self, upto: int) -> None:
        """Forget the raises up to generation upto (a build read the table at upto)."""
        with self._lock:
            for taken in [g for g in self._rows if g <= upto]:
                del self._rows[taken]

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()


def read(connect: Connect, rowids: list[int]) -> Iterator[list[tuple[int, bytes]]]:
    """(rowid, vector) of the rowids still in the table, PART rowids a read (each under the
    gate on its own)."""
    for start in range(0, len(rowids), PART):
        part = rowids[start : start + PART]
        marks = ",".join("?" * len(part))
        with connect() as conn:
            rows = conn.execute(
                f"SELECT rowid, vector FROM vectors WHERE rowid IN ({marks})",  # noqa: S608
                part,
            ).fetchall()
        if rows:  # none: deleted since, nothing to add
            yield rows
