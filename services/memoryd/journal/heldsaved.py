"""index/journal-ids.json: what heldids.py read of each journal month (the ids its lines start
with), saved so that the first show, undo, log or write after a start reads only what the journal
gained since, not every month (a module of its own: the file's shape and its checks are apart from
the reading).

The file is derived, never trusted over the journal: each month's entry is used only while that
month is the same file, no shorter, with the bytes before the offset unchanged (heldids checks
before any use), and an entry or a file that is not of the shape below is left unused, so a
missing, damaged or stale copy costs a read of the months it does not fit. It holds ids only, never
text. It is written whole or not at all (temp file, fsync, rename, fsync the folder); a temp file
left by a crash is removed at the next load.
"""

import json
import logging
import re
from collections import Counter

from pydantic import BaseModel, ConfigDict, ValidationError

from memoryd.home import MONTH_FILE, Home, atomic_write, read_file
from memoryd.journal.idruns import Ids, Runs

log = logging.getLogger("memoryd.journal.heldids")

NAME = "journal-ids.json"
# Raised when what is kept of a month changes; a copy of another format is read again.
FORMAT = 1
HASH = re.compile(r"^[0-9a-f]{64}\Z")
FORM = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(/[5-9]|/[1-9][0-9]+)?\Z")  # idruns.form
ID = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4,}\Z")
# A number no id reaches (the runs' bounds are checked against it).
MOST = 10**12


class _Month(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    inode: int
    offset: int
    tail: str
    size: int  # the file's size and mtime when it was read
    mtime: int
    days: dict[str, tuple[list[int], list[int]]]  # day[/width]: the runs' starts and ends
    again: dict[str, int]


class _Saved(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    format: int
    months: list[_Month]


class _Unfit(ValueError):
    """A saved month whose values are not what a month's reading can hold."""


def load(home: Home) -> dict:
    """The saved months by name (heldids.Month, not looked at yet); {} when there is no usable
    copy (said in one line when there is one that is not usable)."""
    from memoryd.journal.heldids import Month

    where = home.index_dir / NAME
    for left in home.index_dir.glob(f".{NAME}.*.tmp"):
        try:
            left.unlink()  # a save cut short by a crash; the copy is the old one or the new
        except OSError as e:
            log.warning("%s: a leftover temporary file cannot be removed: %s", left, e.strerror)
    try:
        saved = _Saved.model_validate_json(read_file(where))
        if saved.format != FORMAT:
            return {}
        months = {}
        for month in saved.months:
            _check(month)
            days = {
                key: Runs(list(starts), list(ends)) for key, (starts, ends) in month.days.items()
            }
            ids = Ids(days, Counter(month.again))
            seen = (month.size, month.mtime)
            unseen = (-1, -1, -1)  # never a file's stamp: looked at before use
            months[month.name] = Month(month.inode, month.offset, month.tail, ids, seen, unseen)
    except FileNotFoundError:
        return {}
    except (OSError, ValidationError, ValueError) as e:
        log.warning("%s: not usable (%s); the journal's ids are read again", where, e)
        return {}
    return months


def _runs_fit(starts: list[int], ends: list[int]) -> bool:
    if len(starts) != len(ends):
        return False
    last = -2  # an id may be numbered 0000
    for start, end in zip(starts, ends, strict=True):
        if not last + 1 < start <= end < MOST:  # sorted, apart, not touching
            return False
        last = end
    return True


def _check(month: _Month) -> None:
    checks = (
        bool(MONTH_FILE.match(month.name)),
        month.inode >= 0 and 0 <= month.offset <= month.size and bool(HASH.match(month.tail)),
        all(FORM.match(d) and _runs_fit(*runs) for d, runs in month.days.items()),
        all(ID.match(i) and 0 < n < MOST for i, n in month.again.items()),
    )
    if not all(checks):
        raise _Unfit(f"month {month.name!r} is not of the shape a journal month's reading has")


def save(home: Home, months: dict) -> bool:
    """Write the months read (heldids.Month by name) whole; whether it was written. A failure is
    logged and costs only a longer read at the next start."""
    where = home.index_dir / NAME
    rows = [
        {
            "name": name,
            "inode": m.inode,
            "offset": m.offset,
            "tail": m.tail,
            "size": m.seen[0],
            "mtime": m.seen[1],
            "days": {day: [r.starts, r.ends] for day, r in sorted(m.ids.days.items())},
            "again": dict(sorted(m.ids.again.items())),
        }
        for name, m in sorted(months.items())
    ]
    data = json.dumps({"format": FORMAT, "months": rows}).encode("utf-8")
    try:
        if not home.index_dir.is_dir():
            return False  # the index's folder is the start's to make
        atomic_write(where, data)
    except OSError as e:
        log.warning(
            "%s: not saved now (%s); a start reads the journal's ids from the last copy", where, e
        )
        return False
    return True
