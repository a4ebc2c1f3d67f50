"""The entries of memory.md and user.md as bxctl memory stats last printed them.

stats prints each entry behind the ref forget takes for it (memory.md:N, user.md:N, counted from
1), and any write moves the numbers: a session's remove, an undo, a consolidate, an accept, a hand
edit. forget erases for good, so memory.md:N must name the entry the owner saw under N, not the
one standing there now: forget takes the text stats printed under N, wherever that entry stands
now, and refuses when the file no longer holds it (data/targets.py). Notes have the same guard
through index/notesseen.py.

A restart comes between a stats and a forget at every upgrade and every settings change, so the
last print is kept in index/shown.json too (replaced whole, never through a link; it names what
memory.md and user.md held, which are the owner's already, and like the index it is memoryd's
own and not backed up) and read back at the first forget after a start. Per file only the last
print is kept: at most the file's limit in characters. A file that cannot be written or read is
logged, and the print is kept in memory alone.
"""

import json
import logging
import os
import threading
import weakref
from pathlib import Path

from memoryd.memory.entries import LIMITS
from proto.files import atomic_write, open_file, read_at_most

log = logging.getLogger(__name__)

NAME = "shown.json"
# Both files' entries at their limits, as JSON escapes them, with room to spare.
MOST_BYTES = 16 * sum(LIMITS.values()) + 4096

# What each index's stats last printed: file -> the entries, in the order printed (None: the
# saved print has not been read yet).
_printed: "weakref.WeakKeyDictionary[object, dict[str, tuple[str, ...]]]" = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()  # stats and forget run on reader threads


def _path(index) -> Path:
    return index.home.index_dir / NAME


def print_entries(index, file: str, entries: list[str]) -> None:
    """stats printed entries of file, numbered from 1 in this order."""
    if index is None:
        return
    with _lock:
        held = _held(index)
        held[file] = tuple(entries)
        _save(_path(index), held)


def printed(index, file: str) -> tuple[str, ...] | None:
    """The entries of file as the last stats printed them; None: none has."""
    if index is None:
        return None
    with _lock:
        return _held(index).get(file)


def _held(index) -> dict[str, tuple[str, ...]]:
    held = _printed.get(index)
    if held is None:
        held = _printed[index] = _load(_path(index))
    return held


def _load(path: Path) -> dict[str, tuple[str, ...]]:
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return {}
    except OSError as e:
        log.warning("%s: not read, entry numbers count from the next stats: %s", path, e)
        return {}
    try:
        data = read_at_most(fd, MOST_BYTES + 1)
    except OSError as e:
        log.warning("%s: not read, entry numbers count from the next stats: %s", path, e)
        return {}
    finally:
        os.close(fd)
    try:
        value = json.loads(data) if len(data) <= MOST_BYTES else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        log.warning("%s: damaged, entry numbers count from the next stats", path)
        return {}
    return {
        file: tuple(entries)
        for file, entries in value.items()
        if file in LIMITS and isinstance(entries, list) and all(isinstance(e, str) for e in entries)
    }


def _save(path: Path, held: dict[str, tuple[str, ...]]) -> None:
    data = json.dumps({f: list(e) for f, e in held.items()}, ensure_ascii=False).encode()
    try:
        atomic_write(path, data, durable=False)
    except OSError as e:
        log.warning("%s: the entries stats printed are kept in memory only: %s", path, e)
