"""Values read from an index's tables, kept across queries while what they were read from holds.

How a name is addressed (addressed.py) and how many rows hold a phrase (lexbound.py) cost a read
of many rows each time. So each is kept with a stamp: a value that changes whenever the rows it
was read from may have (for a name, the newest row holding it within memoryd's lineage, which
only ever adds rows above the last), and is given back only while the stamp is the same. A value
kept until the rows had merely drifted "enough" made the answer depend on when memoryd last
started: the same question over the same memory, asked before and after a restart, was ranked by
two readings. With an exact stamp, a kept value is always the one a fresh read would give.

A state memoryd did not make (another program wrote the index after memoryd's last commit) has
no stamp: what is read of it is never kept. At most `most` keys are kept, the least recently used
going first. One per index, shared by its reader threads.
"""

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from memoryd.search import generation

V = TypeVar("V")


class Kept(Generic[V]):
    def __init__(self, most: int) -> None:
        self._most = most
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, tuple[V, Hashable]] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def get(self, key: Hashable, stamp: Hashable | None, read: Callable[[], V]) -> V:
        """key's value: the one kept under this stamp, or read() now (outside the lock: two
        readers may both read, and the last one is kept). A None stamp is never kept."""
        if stamp is None:
            return read()
        with self._lock:
            known = self._values.get(key)
            if known is not None and known[1] == stamp:
                self._values.move_to_end(key)
                return known[0]
        value = read()
        with self._lock:
            self._values[key] = (value, stamp)
            self._values.move_to_end(key)
            while len(self._values) > self._most:
                self._values.popitem(last=False)
        return value


def lineage(conn: sqlite3.Connection) -> str | None:
    """The lineage of memoryd's last commit (search/generation.py) when conn's transaction sees
    the spec's table as that commit left it, else None. Within a lineage memoryd only added rows,
    each above every rowid before it; a deletion starts a new lineage."""
    record, figures = generation.current(conn)
    return record.lineage if record is not None and record.figures == figures else None
