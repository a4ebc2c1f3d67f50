"""Values read from an index's tables, kept across queries until the table has drifted.

A term's row count (lexbound.py) and how a name is addressed (addressed.py) change slowly with
the table and cost a read of many rows each time. So each is kept with the table's row count at
the time it was read, and read again once the rows have moved by more than the drift's share;
at most `most` keys are kept, the least recently used going first. One per index, shared by its
reader threads.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Kept(Generic[V]):
    def __init__(self, drift: float, most: int) -> None:
        self._drift = drift
        self._most = most
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def get(self, key: Hashable, rows: int, read: Callable[[], V]) -> V:
        """key's value: the one kept when read at a row count within the drift of rows, or
        read() now (outside the lock: two readers may both read, and the last one is kept)."""
        with self._lock:
            known = self._values.get(key)
            if known is not None and abs(rows - known[1]) <= self._drift * known[1]:
                self._values.move_to_end(key)
                return known[0]
        value = read()
        with self._lock:
            self._values[key] = (value, rows)
            self._values.move_to_end(key)
            while len(self._values) > self._most:
                self._values.popitem(last=False)
        return value
