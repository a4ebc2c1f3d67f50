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
print is kept: at most the file's limit in characters. A file that cannot be written is logged,
and the print is kept in memory alone. One that is there but cannot be read back (damaged, or
unreadable) is not taken for "no stats since the start": a forget by number is refused until
stats prints again (unreadable()), or it would take whatever stands at the number now. A forget
puts its marker in place of the text it took, here as everywhere memoryd holds it (scrub).
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
# Why the saved print of an index could not be read back, until stats prints again.
_unreadable: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()


def _path(index) -> Path:
    return index.home.index_dir / NAME


def print_entries(index, file: str, entries: list[str]) -> None:
    """stats printed entries of file, numbered from 1 in this order."""
    if index is None:
        return
    with _lock:
        held = _held(index)
        held[file] = tuple(entries)
        if _unreadable.pop(index, None) is not None:
            held = {file: held[file]}  # what else the damaged file held is not known
            _printed[index] = held
        _save(_path(index), held)


def unreadable(index) -> str | None:
    """Why the print saved before this start could not be read back (a forget by number is
    refused until stats prints again), or None."""
    if index is None:
        return None
    with _lock:
        _held(index)
        return _unreadable.get(index)


def scrub(index, text: str, marker: str) -> None:
    """A forget took text: the saved print holds the marker in its place (numbers unchanged)."""
    if index is None:
        return
    with _lock:
        held = _held(index)
        changed = {f: tuple(marker if e == text else e for e in es) for f, es in held.items()}
        if changed != held or _holds(_path(index), text):
            _printed[index] = changed
            _save(_path(index), changed)


def printed(index, file: str) -> tuple[str, ...] | None:
    """The entries of file as the last stats printed them; None: none has."""
    if index is None:
        return None
    with _lock:
        return _held(index).get(file)


def _held(index) -> dict[str, tuple[str, ...]]:
    held = _printed.get(index)
    if held is None:
        loaded = _load(_path(index))
        if isinstance(loaded, str):
            _unreadable[index] = loaded
            loaded = {}
        held = _printed[index] = loaded
    return held


def _load(path: Path) -> dict[str, tuple[str, ...]] | str:
    """The saved print, or why it could not be read back."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return {}
    except OSError as e:
        log.warning("%s: not read; forget by number waits for the next stats: %s", path, e)
        return f"{path} could not be read ({e.strerror or e})"
    try:
        data = read_at_most(fd, MOST_BYTES + 1)
    except OSError as e:
        log.warning("%s: not read; forget by number waits for the next stats: %s", path, e)
        return f"{path} could not be read ({e.strerror or e})"
    finally:
        os.close(fd)
    try:
        value = json.loads(data) if len(data) <= MOST_BYTES else None
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(
        file in LIMITS and isinstance(entries, list) and all(isinstance(e, str) for e in entries)
        for file, entries in value.items()
    ):
        log.warning("%s: damaged; forget by number waits for the next stats", path)
        return f"{path} is damaged"
    return {file: tuple(entries) for file, entries in value.items()}


def _holds(path: Path, text: str) -> bool:
    """Whether the saved file holds text's bytes (a print the damaged file alone kept)."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        needle = json.dumps(text, ensure_ascii=False)[1:-1].encode()
        return needle in read_at_most(fd, MOST_BYTES + 1)
    except OSError:
        return False
    finally:
        os.close(fd)


def _save(path: Path, held: dict[str, tuple[str, ...]]) -> None:
    data = json.dumps({f: list(e) for f, e in held.items()}, ensure_ascii=False).encode()
    try:
        atomic_write(path, data, durable=False)
    except OSError as e:
        log.warning("%s: the entries stats printed are kept in memory only: %s", path, e)
