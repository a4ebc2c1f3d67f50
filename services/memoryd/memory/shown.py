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

bxctl memory block prints the refs of the entries it leaves out the same way (print_refs): each
number it printed names, from then on, the entry printed beside it, and every other number keeps
what the last print said of it. A number no command printed is refused once a print of the file
is kept, as one stats did not print always was. The prints are kept per Home object, which the
store (block) and the index (stats, forget) share, never per equal Home: a new start makes a new
one, and reads the saved print back.
"""

import json
import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Generic, TypeVar

from memoryd.memory.entries import LIMITS
from proto.files import atomic_write, open_file, read_at_most
from proto.jsonread import loads_or_none

log = logging.getLogger(__name__)

NAME = "shown.json"
# Both files' entries at their limits, as JSON escapes them, with room to spare.
MOST_BYTES = 16 * sum(LIMITS.values()) + 4096

STATS, BLOCK = "stats", "block"
# One number's print: the command that printed it and the entry printed beside it; None where no
# command printed the number.
Printed = tuple[str, str]
Prints = dict[str, tuple[Printed | None, ...]]
V = TypeVar("V")


class _PerHome(Generic[V]):
    """Values kept per Home object while it lives. Home compares by its path, so a weak
    dictionary would hand a new start's Home the print an earlier one kept in memory."""

    def __init__(self) -> None:
        self._values: dict[int, tuple[weakref.ref, V]] = {}

    def get(self, home) -> V | None:
        item = self._values.get(id(home))
        return item[1] if item is not None and item[0]() is home else None

    def set(self, home, value: V) -> None:
        key = id(home)

        def gone(ref: weakref.ref) -> None:
            if self._values.get(key, (None,))[0] is ref:
                del self._values[key]

        self._values[key] = (weakref.ref(home, gone), value)

    def pop(self, home) -> V | None:
        value = self.get(home)
        if value is not None:
            del self._values[id(home)]
        return value


# What was last printed for each Home: file -> each number's print, from 1 (absent: the saved
# print has not been read yet).
_printed: _PerHome[Prints] = _PerHome()
_lock = threading.Lock()  # stats, block and forget run on reader threads
# Why the saved print could not be read back, until stats prints again.
_unreadable: _PerHome[str] = _PerHome()


def _path(holder) -> Path:
    return holder.home.index_dir / NAME


def print_entries(index, file: str, entries: list[str]) -> None:
    """stats printed entries of file, numbered from 1 in this order."""
    if index is None:
        return
    with _lock:
        held = _held(index)
        held[file] = tuple((STATS, e) for e in entries)
        _unreadable.pop(index.home)
        _save(_path(index), held)


def print_refs(holder, file: str, numbered: dict[int, str]) -> None:
    """block printed these entries of file under their numbers (from 1); the file's other
    numbers keep what the last print said of them. holder: the store or the index. While the
    saved print cannot be read back it is not saved over: what it held of the other numbers
    would be lost for good, and a forget by one of them must stay refused."""
    if not numbered:
        return
    with _lock:
        held = _held(holder)
        prints: list[Printed | None] = list(held.get(file, ()))
        prints += [None] * (max(numbered) - len(prints))
        for number, text in numbered.items():
            prints[number - 1] = (BLOCK, text)
        held[file] = tuple(prints)
        if _unreadable.get(holder.home) is None:
            _save(_path(holder), held)


def unreadable(index) -> str | None:
    """Why the print saved before this start could not be read back (a forget by number is
    refused until stats prints again), or None."""
    if index is None:
        return None
    with _lock:
        _held(index)
        return _unreadable.get(index.home)


def scrub(index, text: str, marker: str) -> None:
    """A forget took text: the saved print holds the marker in its place (numbers unchanged)."""
    if index is None:
        return
    with _lock:
        held = _held(index)
        changed = {f: tuple(_scrubbed(p, text, marker) for p in ps) for f, ps in held.items()}
        if changed != held or _holds(_path(index), text):
            _printed.set(index.home, changed)
            _save(_path(index), changed)


def _scrubbed(one: Printed | None, text: str, marker: str) -> Printed | None:
    return (one[0], marker) if one is not None and one[1] == text else one


def printed(index, file: str) -> tuple[str | None, ...] | None:
    """The entries of file as last printed, by number from 1 (None where no command printed
    the number); None: no print of file is kept."""
    if index is None:
        return None
    with _lock:
        prints = _held(index).get(file)
    return None if prints is None else tuple(None if p is None else p[1] for p in prints)


def printed_by(index, file: str, number: int) -> str | None:
    """The command (STATS or BLOCK) that last printed number of file, or None."""
    if index is None:
        return None
    with _lock:
        prints = _held(index).get(file, ())
    one = prints[number - 1] if 1 <= number <= len(prints) else None
    return None if one is None else one[0]


def printers(index, file: str) -> set[str]:
    """The commands whose print of file is kept (STATS, BLOCK)."""
    if index is None:
        return set()
    with _lock:
        return {p[0] for p in _held(index).get(file, ()) if p is not None}


def _held(holder) -> Prints:
    held = _printed.get(holder.home)
    if held is None:
        loaded = _load(_path(holder))
        if isinstance(loaded, str):
            _unreadable.set(holder.home, loaded)
            loaded = {}
        held = loaded
        _printed.set(holder.home, held)
    return held


def _readable(value: object) -> bool:
    """A saved number's print: an entry stats printed is its text, block's {"by": "block",
    "entry": text}, a number none printed null."""
    if value is None or isinstance(value, str):
        return True
    return (
        isinstance(value, dict)
        and value.keys() == {"by", "entry"}
        and value["by"] == BLOCK
        and isinstance(value["entry"], str)
    )


def _one(value) -> Printed | None:
    """A saved number's print, once _readable."""
    if value is None:
        return None
    return (STATS, value) if isinstance(value, str) else (BLOCK, value["entry"])


def _saved(one: Printed | None) -> object:
    if one is None:
        return None
    return one[1] if one[0] == STATS else {"by": one[0], "entry": one[1]}


def _load(path: Path) -> Prints | str:
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
    value = loads_or_none(data) if len(data) <= MOST_BYTES else None
    if not isinstance(value, dict) or not all(
        file in LIMITS and isinstance(entries, list) and all(_readable(e) for e in entries)
        for file, entries in value.items()
    ):
        log.warning("%s: damaged; forget by number waits for the next stats", path)
        return f"{path} is damaged"
    return {file: tuple(_one(e) for e in entries) for file, entries in value.items()}


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


def _save(path: Path, held: Prints) -> None:
    data = json.dumps(
        {f: [_saved(p) for p in ps] for f, ps in held.items()}, ensure_ascii=False
    ).encode()
    try:
        atomic_write(path, data, durable=False)
    except OSError as e:
        log.warning("%s: the entries stats printed are kept in memory only: %s", path, e)
