"""The entries of memory.md and user.md as bxctl memory stats last printed them, per memoryd.

stats prints each entry behind the ref forget takes for it (memory.md:N, user.md:N, counted from
1), and any write moves the numbers: a session's remove, an undo, a consolidate, an accept, a hand
edit. forget erases for good, so memory.md:N must name the entry the owner saw under N, not the
one standing there now: forget takes the text stats printed under N, wherever that entry stands
now, and refuses when the file no longer holds it (data/targets.py). Notes have the same guard
through index/notesseen.py.

What stats printed before memoryd started is not known, so after a start no entry number counts
until a stats of this memoryd prints it. The entries are kept in memory, per index (one per
memoryd start), and per file only the last print: at most the file's limit in characters.
"""

import threading
import weakref

# What each index's stats last printed: file -> the entries, in the order printed.
_printed: "weakref.WeakKeyDictionary[object, dict[str, tuple[str, ...]]]" = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()  # stats and forget run on reader threads


def print_entries(index, file: str, entries: list[str]) -> None:
    """stats printed entries of file, numbered from 1 in this order."""
    if index is None:
        return
    with _lock:
        _printed.setdefault(index, {})[file] = tuple(entries)


def printed(index, file: str) -> tuple[str, ...] | None:
    """The entries of file as the last stats of this memoryd printed them; None: none has."""
    if index is None:
        return None
    with _lock:
        return _printed.get(index, {}).get(file)
