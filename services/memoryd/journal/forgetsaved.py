"""index/journal-forgets.json: what forgetread.py read of each journal month, saved so that a
start reads only what the journal gained since (a module of its own: the file's shape and its
checks are apart from the reading).

The file is derived, never trusted over the journal: each month's entry is used only while that
month is the same file, no shorter, with the bytes before the offset unchanged (forgetread checks
before any use), and an entry or a file that is not of the shape below is left unused, so a missing,
damaged or stale copy costs a read of the months it does not fit. It is written whole or not at all
(temp file, fsync, rename, fsync the folder); a temp file left by a crash is removed at the next
load.
"""

import json
import logging
import re

from pydantic import BaseModel, ConfigDict, ValidationError

from memoryd.home import MONTH_FILE, Home, atomic_write, read_file
from memoryd.journal.forgetlines import DIGEST, KEY, LINE_ID, Forgot

log = logging.getLogger("memoryd.journal.forgetlines")

NAME = "journal-forgets.json"
# Raised when what is kept of a month changes; a copy of another format is read again.
FORMAT = 1
HASH = re.compile(r"^[0-9a-f]{64}\Z")

Text = tuple[str, str, str]  # a Forgot: its digest, time and edit


class _Month(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    inode: int
    offset: int
    tail: str
    size: int  # the file's size and mtime when it was read
    mtime: int
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
    """The saved months by name (forgetread.Month, not looked at yet); {} when there is no usable
    copy (said in one line when there is one that is not usable)."""
    from memoryd.journal.forgetread import Found, Month

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
    except (OSError, ValidationError, ValueError) as e:
        log.warning("%s: not usable (%s); the journal's forget lines are read again", where, e)
        return {}
    return months


def _check(month: _Month) -> None:
    texts = month.texts + month.last_texts
    checks = (
        bool(MONTH_FILE.match(month.name)),
        month.inode >= 0 and 0 <= month.offset <= month.size and bool(HASH.match(month.tail)),
        all(KEY.match(k) for k in month.keys + month.last),
        all(k == "?" or LINE_ID.match(k) for k in month.keyless),
        all(DIGEST.match(d) and len(t) <= 32 for d, t, _ in texts),
    )
    if not all(checks):
        raise _Unfit(f"month {month.name!r} is not of the shape a journal month's reading has")


def save(home: Home, months: dict) -> bool:
    """Write the months read (forgetread.Month by name) whole; whether it was written. A failure
    is logged and costs only a longer read at the next start."""
    where = home.index_dir / NAME
    rows = [
        {
            "name": name,
            "inode": m.inode,
            "offset": m.offset,
            "tail": m.tail,
            "size": m.seen[0],
            "mtime": m.seen[1],
            "keys": sorted(m.found.keys),
            "keyless": m.found.keyless,
            "last": sorted(m.found.last),
            "texts": _texts(m.found.texts),
            "last_texts": _texts(m.found.last_texts),
        }
        for name, m in sorted(months.items())
        if m.inode >= 0 and m.seen is not None  # one that could not be read is read at start
    ]
    data = json.dumps({"format": FORMAT, "months": rows}, ensure_ascii=False).encode("utf-8")
    try:
        if not home.index_dir.is_dir():
            return False  # the index's folder is the start's to make
        atomic_write(where, data)
    except OSError as e:
        log.warning(
            "%s: not saved now (%s); a start reads the journal from the last copy", where, e
        )
        return False
    return True


def _texts(texts) -> list[list[str]]:
    return [[f.digest, f.time, f.edit] for f in sorted(texts, key=lambda f: (f.time, f.digest))]
