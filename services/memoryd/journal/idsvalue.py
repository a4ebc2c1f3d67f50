"""What a copy of the ids handed out holds (memory/.ids.json, and its spare, the floor in index/):
read whole or not at all, and checked, so that a damaged or hand-edited copy names nothing rather
than an id that refuses every write; the days, numbers and first ids merged from the copies.

Why a module of its own: ids.py's Issued decides which copy counts and writes them; this only
reads a copy's value and takes it apart, the same for either copy.
"""

import logging
import os
import re
from pathlib import Path

from memoryd.home import open_file
from memoryd.journal.idform import EDIT_ID, PENDING_ID, order
from proto.files import NotRegular, read_at_most
from proto.jsonread import loads_or_none

# Issued's logger: what these say of a copy are its lines, and keep its name.
log = logging.getLogger("memoryd.journal.ids")

FIRST_KEY = "first"
# Which numbers of a day rested on the floor alone (Issued), and how many such ranges a day keeps.
FLOOR_ONLY_KEY = "floor_only"
FLOOR_ONLY_MOST = 16
ISSUED_MAX = 4096
KINDS = {
    "edit": EDIT_ID,
    "pending": PENDING_ID,
}

# The days kept per kind: a clock set back or forward by weeks is far outside what this guards.
ISSUED_DAYS = 32
_DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def latest(days: dict[str, int]) -> dict[str, int]:
    return {day: days[day] for day in sorted(days)[-ISSUED_DAYS:]}


def _days_of(value: object, pattern: re.Pattern) -> dict[str, int]:
    """{day: last number} from the file's value for a kind (or one id, as it was first kept)."""
    if isinstance(value, str) and pattern.match(value):
        day, number = order(value)
        return {day: number}
    if not isinstance(value, dict):
        return {}
    return {
        day: number
        for day, number in value.items()
        if isinstance(day, str)
        and _DAY.match(day)
        and isinstance(number, int)
        and not isinstance(number, bool)
        and 0 < number < 10**9
    }


def read_copy(path: Path, said: bool) -> dict:
    """One copy's value; {} when it is missing or not usable (said only for .ids.json)."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return {}
    except OSError as e:
        if said:
            why = e if isinstance(e, NotRegular) else e.strerror
            log.warning("%s: not read: %s", path, why)
        return {}
    try:
        data = read_at_most(fd, ISSUED_MAX + 1)
    except OSError as e:
        if said:
            log.warning("%s: not read: %s", path, e.strerror)
        return {}
    finally:
        os.close(fd)
    try:
        value = loads_or_none(data.decode("utf-8")) if len(data) <= ISSUED_MAX else None
    except UnicodeDecodeError:
        value = None
    if not isinstance(value, dict):
        if data and said:
            log.warning("%s: damaged; the journal alone gives the next ids", path)
        return {}
    return value


def all_days(value: dict) -> dict[str, dict[str, int]]:
    return {kind: _days_of(value.get(kind), pattern) for kind, pattern in KINDS.items()}


def take_firsts(into: dict[str, str], value: dict) -> None:
    """The copy's first id of each kind, into into where it is earlier."""
    firsts = value.get(FIRST_KEY)
    for kind, pattern in KINDS.items():
        first = firsts.get(kind) if isinstance(firsts, dict) else None
        if isinstance(first, str) and pattern.match(first):
            into[kind] = earliest(into.get(kind), first) or first


def earliest(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return a if b is None else b
    return a if order(a) <= order(b) else b


def merged(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    days = dict(a)
    for day, number in b.items():
        days[day] = max(days.get(day, 0), number)
    return days


def floor_only_of(value: object) -> dict[str, dict[str, list[tuple[int, int]]]]:
    """.ids.json's floor_only, {kind: {day: [[low, high], ...]}}; what is not such is left out."""
    out: dict[str, dict[str, list[tuple[int, int]]]] = {}
    if not isinstance(value, dict):
        return out
    for kind in KINDS:
        days = value.get(kind)
        if not isinstance(days, dict):
            continue
        for day, spans in days.items():
            if not isinstance(day, str) or not _DAY.match(day) or not isinstance(spans, list):
                continue
            kept = [(s[0], s[1]) for s in spans[-FLOOR_ONLY_MOST:] if _is_span(s)]
            if kept:
                out.setdefault(kind, {})[day] = kept
    return out


def _is_span(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in value)
        and 0 <= value[0] < value[1] < 10**9
    )
