"""index/journal-ids.json: what heldids.py read of each journal month (the ids its lines start
with), saved so that the first show, undo, log or write after a start reads only what the journal
gained since, not every month (a module of its own: the file's shape and its checks are apart from
the reading).

Derived, checked and written as monthsaved.py says: a missing, damaged or stale copy costs a read
of the months it does not fit (heldids checks each before any use). It holds ids only, never text.
"""

import logging
import re
from collections import Counter

from pydantic import BaseModel, ConfigDict, ValidationError

from memoryd.home import Home
from memoryd.journal import monthsaved
from memoryd.journal.boundedfile import read_most
from memoryd.journal.idform import EDIT_ID, NUMBER_MOST
from memoryd.journal.idruns import Ids, Month, Runs
from proto.files import TooLarge

log = logging.getLogger("memoryd.journal.heldids")

NAME = "journal-ids.json"
# Raised when what is kept of a month changes; a copy of another format is read again.
FORMAT = 1
FORM = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(/[5-9])?\Z")  # idruns.form, idform.NUMBER
ID = EDIT_ID
# A number no id reaches (the runs' bounds are checked against it).
MOST = NUMBER_MOST + 1
# Far past what a copy holds: 1 KiB for a million edits, 14 MB were every other number of each
# day's ids handed to a pending write (measured). A copy over it is damaged, and read no further.
SAVED_MOST = 64 << 20


class _Month(monthsaved.SavedMonth):
    days: dict[str, tuple[list[int], list[int]]]  # day[/width]: the runs' starts and ends
    again: dict[str, int]


class _Saved(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    format: int
    months: list[_Month]


class _Unfit(ValueError):
    """A saved month whose values are not what a month's reading can hold."""


def load(home: Home) -> dict:
    """The saved months by name (idruns.Month, not looked at yet); {} when there is no usable
    copy (said in one line when there is one that is not usable)."""
    where = home.index_dir / NAME
    monthsaved.remove_leftovers(home, NAME, log)
    try:
        saved = _Saved.model_validate_json(read_most(where, SAVED_MOST))
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
    except TooLarge as e:
        log.warning(
            "%s: %s, larger than any copy memoryd writes: taken as damaged and "
            "not read; the journal's ids are read again, as when it is missing",
            where,
            e.strerror,
        )
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
        monthsaved.stamp_fits(month),
        all(FORM.match(d) and _runs_fit(*runs) for d, runs in month.days.items()),
        all(ID.match(i) and 0 < n < MOST for i, n in month.again.items()),
    )
    if not all(checks):
        raise _Unfit(f"month {month.name!r} is not of the shape a journal month's reading has")


def save(home: Home, months: dict) -> bool:
    """Write the months read (idruns.Month by name) whole; whether it was written."""
    rows = [
        {
            **monthsaved.stamp(name, m),
            "days": {day: [r.starts, r.ends] for day, r in sorted(m.ids.days.items())},
            "again": dict(sorted(m.ids.again.items())),
        }
        for name, m in sorted(months.items())
    ]
    then = "a start reads the journal's ids from the last copy"
    return monthsaved.write(home, NAME, FORMAT, rows, log, then)
