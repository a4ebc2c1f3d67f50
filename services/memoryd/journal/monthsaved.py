"""What the saved copies of a journal reading share: the index/ files in which forgetread.py and
heldids.py keep how far they read each month file (forgetsaved.py, heldsaved.py).

Each copy is derived and never trusted over the journal: a month's entry names the file (its
name and inode), how far it was read (offset), a hash of the bytes just before that (tail), and
the file's size and mtime when read; the reader checks them all before it uses anything else of
the entry. An entry of another shape or a file of another format is left unused, so a damaged or
stale copy costs a read, never a wrong answer. The copy is written whole or not at all (temp
file, fsync, rename, fsync the folder), and a temp file a crash left is removed at the next load.
"""

import json
import logging
import re

from pydantic import BaseModel, ConfigDict

from memoryd.home import MONTH_FILE, Home, atomic_write

HASH = re.compile(r"^[0-9a-f]{64}\Z")


class SavedMonth(BaseModel):
    """The stamp every saved month carries; each reader adds what it read."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    inode: int
    offset: int
    tail: str
    size: int  # the file's size and mtime when it was read
    mtime: int


def stamp_fits(month: SavedMonth) -> bool:
    """Whether the stamp is one a reading of a month file could have left."""
    return (
        bool(MONTH_FILE.match(month.name))
        and month.inode >= 0
        and 0 <= month.offset <= month.size
        and bool(HASH.match(month.tail))
    )


def stamp(name: str, month) -> dict:
    """The stamp of a month read (a reader's Month: inode, offset, tail, seen) as saved."""
    return {
        "name": name,
        "inode": month.inode,
        "offset": month.offset,
        "tail": month.tail,
        "size": month.seen[0],
        "mtime": month.seen[1],
    }


def remove_leftovers(home: Home, name: str, log: logging.Logger) -> None:
    """Remove the temp files a save cut short by a crash left: the copy is the old or the new."""
    for left in home.index_dir.glob(f".{name}.*.tmp"):
        try:
            left.unlink()
        except OSError as e:
            log.warning("%s: a leftover temporary file cannot be removed: %s", left, e.strerror)


def write(
    home: Home, name: str, form: int, rows: list[dict], log: logging.Logger, then: str
) -> bool:
    """Write the copy whole; whether it was written. A failure is logged (then: what a start does
    instead) and costs only a longer read at the next start."""
    where = home.index_dir / name
    data = json.dumps({"format": form, "months": rows}, ensure_ascii=False).encode("utf-8")
    try:
        if not home.index_dir.is_dir():
            return False  # the index's folder is the start's to make
        atomic_write(where, data)
    except OSError as e:
        log.warning("%s: not saved now (%s); %s", where, e, then)
        return False
    return True
