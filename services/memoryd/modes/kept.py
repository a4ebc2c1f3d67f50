"""Values read from an index's tables, kept across queries until the table has drifted.

A term's row count (lexbound.py) and how a name is addressed (addressed.py) change slowly with
the table and cost a read of many rows each time. So each is kept with the table's row count at
the time it was read, and read again once the rows have moved by more than the drift's share;
at most `most` keys are kept, the least recently used going first. A value read before rows were
deleted (the file's count of deletions, deletions()) is read again: a forgotten row's part in it
must go at once, and a count may not exceed the rows left. One per index, shared by its reader
threads.
"""

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from memoryd.search.schema import DELETIONS_PRAGMA

V = TypeVar("V")


class Kept(Generic[V]):
    def __init__(self, drift: float, most: int) -> None:
        self._drift = drift
        self._most = most
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, tuple[V, int, int]] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def get(self, key: Hashable, rows: int, read: Callable[[], V], deleted: int = 0) -> V:
        """key's value: the one kept when read at a row count within the drift of rows and at
        the same count of deletions, or read() now (outside the lock: two readers may both read,
        and the last one is kept)."""
        with self._lock:
            known = self._values.get(key)
            if (
                known is not None
                and known[2] == deleted
                and abs(rows - known[1]) <= self._drift * known[1]
            ):
                self._values.move_to_end(key)
                return known[0]
        value = read()
        with self._lock:
            self._values[key] = (value, rows, deleted)
            self._values.move_to_end(key)
            while len(self._values) > self._most:
                self._values.popitem(last=False)
        return value


def deletions(conn: sqlite3.Connection) -> int:
    """The file's count of deletions as conn's transaction sees it (a header field: no read of
    any table)."""
    return int(conn.execute(f"PRAGMA {DELETIONS_PRAGMA}").fetchone()[0])
