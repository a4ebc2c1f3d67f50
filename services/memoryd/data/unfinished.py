"""A forget that began to write and has not finished: memory/.forgetting.json.

A forget rewrites memory.md, user.md and notes.md before it scrubs the journal, the recall log,
pending writes and the exports (the journal never says less than the files hold). Killed in
between, the files no longer hold the text under the number the owner gave: memory.md:3 is the
entry that followed, note:N holds the marker. Run again by the same id, such a forget would erase
another entry, or scrub nothing and answer that it forgot. So before its first write a forget
records what it forgets (the id given, what it names, its text(s) and the keys it lists), and
removes the record once everything is done. While a record stands, forget finishes that forget
when given the same id or the text's exact words, and refuses anything else with nothing
forgotten: a number given then may name another entry or note than the first run's.

The record holds the text because nothing else is sure to: the journal line of a forget never
does, and the files no longer do. It stands only until the forget it names is finished, in
memory/ (kept like the other files there), and is not part of a backup (layout.ROOT_FILES).
A record removed (a hidden file that looks like junk) before its forget finished is found again
from the journal's older lines and the exports, which still hold the text (forgetstopped.py):
read() answers it as the record would, and the start writes it back (journal/forgottenwrite.mend).
"""

import json
import os
import stat
from dataclasses import dataclass

from memoryd.errors import AdminRefused
from memoryd.home import Home, atomic_write
from proto.files import open_file, read_at_most

NAME = ".forgetting.json"
LIMIT = 64 * 1024 * 1024  # far above any entry's or note's texts; a bounded read all the same


@dataclass
class Unfinished:
    ref: str  # the id or text the owner gave
    id: str
    what: str
    texts: list[str]
    keys: list[str]


def path_of(home: Home):
    return home.memory / NAME


def record(home: Home, entry: Unfinished) -> None:
    """Written whole (atomically) before the forget's first write."""
    value = {
        "ref": entry.ref,
        "id": entry.id,
        "what": entry.what,
        "texts": entry.texts,
        "keys": entry.keys,
    }
    atomic_write(path_of(home), json.dumps(value, ensure_ascii=False).encode("utf-8"))


def drop(home: Home) -> None:
    """The forget is finished (or refused before it wrote): its record goes. Only a regular
    file is removed: anything else there is not memoryd's."""
    path = path_of(home)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return
    except FileNotFoundError:
        return
    os.unlink(path)


def read(home: Home) -> Unfinished | None:
    """The unfinished forget, or None; AdminRefused (one line) when its record cannot be read,
    since a forget by number could then name another entry than the unfinished one did. With no
    record, the forget the journal and the exports show stopped part way (forgetstopped.py)."""
    path = path_of(home)
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return lost(home)
    except OSError as e:
        raise _unreadable(path, e.strerror or str(e)) from None
    try:
        data = read_at_most(fd, LIMIT + 1)
    except OSError as e:
        raise _unreadable(path, e.strerror or str(e)) from None
    finally:
        os.close(fd)
    if len(data) > LIMIT:
        raise _unreadable(path, "too large")
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise _unreadable(path, "not JSON") from None
    entry = _parsed(value)
    if entry is None:
        raise _unreadable(path, "not a forget's record")
    return entry


def _parsed(value: object) -> Unfinished | None:
    if not isinstance(value, dict):
        return None
    ref, id_, what = value.get("ref"), value.get("id"), value.get("what")
    texts, keys = value.get("texts"), value.get("keys")
    if not (isinstance(ref, str) and isinstance(id_, str) and isinstance(what, str)):
        return None
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        return None
    return Unfinished(ref, id_, what, texts, keys)


def _unreadable(path, why: str) -> AdminRefused:
    return AdminRefused(
        f"refused: {path} (the record of a forget stopped part way) cannot be read ({why}); "
        "nothing was forgotten: remove it, then forget the text by its exact words"
    )


def lost(home: Home) -> Unfinished | None:
    """The forget whose record is gone though it did not finish (forgetstopped.py), or None."""
    from memoryd.data import forgetstopped  # it reads the journal, whose modules import this

    return forgetstopped.lost(home)
