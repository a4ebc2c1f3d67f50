"""index/journal-forgets.json: what forgetread.py read of each journal month, saved so that a
start reads only what the journal gained since (a module of its own: the file's shape and its
checks are apart from the reading).

Derived, checked and written as monthsaved.py says: a missing, damaged or stale copy costs a read
of the months it does not fit (forgetread checks each before any use).
"""

import logging

from pydantic import BaseModel, ConfigDict, ValidationError

from memoryd.home import Home
from memoryd.journal import monthsaved
from memoryd.journal.boundedfile import read_most
from memoryd.journal.forgetlines import DIGEST, KEY, LINE_ID, Forgot, Found, Month
from proto.files import TooLarge

log = logging.getLogger("memoryd.journal.forgetlines")

NAME = "journal-forgets.json"
# Raised when what is kept of a month changes; a copy of another format is read again.
FORMAT = 1
# Far past what a copy holds: 28 MB for a month whose forgets listed a million session keys
# (measured). A copy over it is damaged, and read no further.
SAVED_MOST = 128 << 20

Text = tuple[str, str, str]  # a Forgot: its digest, time and edit


class _Month(monthsaved.SavedMonth):
    keys: list[str]
    keyless: list[str]
    last: list[str]
    texts: list[Text]
    last_texts: list[Text]


class _Saved(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    format: int
    months: list[_Month]


class _Unfit(ValueError):
    """A saved month whose values are not what a month's reading can hold."""


def load(home: Home) -> dict:
    """The saved months by name (forgetlines.Month, not looked at yet); {} when there is no usable
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
            found = Found(
                set(month.keys),
                {Forgot(*t) for t in month.texts},
                list(month.keyless),
                frozenset(month.last),
                frozenset(Forgot(*t) for t in month.last_texts),
            )
            seen = (month.size, month.mtime)
            months[month.name] = Month(month.inode, month.offset, month.tail, found, seen=seen)
    except FileNotFoundError:
        return {}
    except TooLarge as e:
        log.warning(
            "%s: %s, larger than any copy memoryd writes: taken as damaged and "
            "not read; the journal's forget lines are read again, as when it is missing",
            where,
            e.strerror,
        )
        return {}
    except (OSError, ValidationError, ValueError) as e:
        log.warning("%s: not usable (%s); the journal's forget lines are read again", where, e)
        return {}
    return months


def _check(month: _Month) -> None:
    texts = month.texts + month.last_texts
    checks = (
        monthsaved.stamp_fits(month),
        all(KEY.match(k) for k in month.keys + month.last),
        all(k == "?" or LINE_ID.match(k) for k in month.keyless),
        all(DIGEST.match(d) and len(t) <= 32 for d, t, _ in texts),
    )
    if not all(checks):
        raise _Unfit(f"month {month.name!r} is not of the shape a journal month's reading has")


def save(home: Home, months: dict) -> bool:
    """Write the months read (forgetread.Month by name) whole; whether it was written."""
    rows = [
        {
            **monthsaved.stamp(name, m),
            "keys": sorted(m.found.keys),
            "keyless": m.found.keyless,
            "last": sorted(m.found.last),
            "texts": _texts(m.found.texts),
            "last_texts": _texts(m.found.last_texts),
        }
        for name, m in sorted(months.items())
        if m.inode >= 0 and m.seen is not None  # one that could not be read is read at start
    ]
    then = "a start reads the journal from the last copy"
    return monthsaved.write(home, NAME, FORMAT, rows, log, then)


def _texts(texts) -> list[list[str]]:
    return [[f.digest, f.time, f.edit] for f in sorted(texts, key=lambda f: (f.time, f.digest))]
