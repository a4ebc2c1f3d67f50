"""Edit and pending ids (YYYY-MM-DD-NNNN, p-YYYY-MM-DD-NNNN): their pattern, their day and number,
and the ids handed out in this home (Issued, memory/.ids.json, with a copy in index/), so that none
is handed out twice once the journal or pending.jsonl has lost the line that held it (journal.py
says why)."""

import json
import logging
import os
import re
import threading
from pathlib import Path

from memoryd.home import Home, atomic_write, open_file
from memoryd.journal import idcopies
from proto.files import NotRegular, read_at_most

log = logging.getLogger(__name__)

# An id's day, and its number: NNNN, at least four digits and at most nine. No day holds a
# billion edits, so a longer number is a damaged or hand-edited id, and every pattern that reads
# an id (here, and the journal's byte patterns: scan.py, heldids.py, twice.py, damaged.py) takes
# it as no id, as it takes any other damage: int() of such a number raises past 4,300 digits
# (where a write had already renamed its file into place), and costs time long before that.
DAY = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
NUMBER = "[0-9]{4,9}"
NUMBER_MOST = 10**9 - 1
DAY_B = DAY.encode()
NUMBER_B = NUMBER.encode()

EDIT_ID = re.compile(rf"^({DAY})-({NUMBER})\Z")
PENDING_ID = re.compile(rf"^p-{DAY}-{NUMBER}\Z")
_DAY_NUMBER = re.compile(rf"({DAY})-({NUMBER})\Z")


def day_numbers(ids: list[str], day: str) -> list[int]:
    """The NNNN of every id of the given day (ids of the form <prefix>YYYY-MM-DD-NNNN)."""
    numbers = []
    for value in ids:
        m = _DAY_NUMBER.search(value) if isinstance(value, str) else None
        if m is not None and m.group(1) == day:
            numbers.append(int(m.group(2)))
    return numbers


def order(value: str | None) -> tuple[str, int]:
    """An id (edit or pending) as (day, number), for comparing two; ("", 0) for none."""
    m = _DAY_NUMBER.search(value) if isinstance(value, str) else None
    return (m.group(1), int(m.group(2))) if m is not None else ("", 0)


ISSUED_NAME = ".ids.json"
# The copy kept outside memory/: memory/ removed whole (a mistaken rm -rf, a cleaner) takes
# .ids.json with the journal, and a start that counted from nothing would give the ids the
# backups' journals already gave to other edits.
FLOOR_NAME = "ids-handed-out.json"
FIRST_KEY = "first"
ISSUED_MAX = 4096
_ISSUED_KINDS = {
    "edit": EDIT_ID,
    "pending": PENDING_ID,
}


class Issued:
    """The ids handed out in this home, per kind (edit, pending) and day: the last number of each
    of the latest ISSUED_DAYS days (memory/.ids.json: {"edit": {"2026-12-01": 4, ...}, ...}), so
    that no id is handed out twice once the journal or pending.jsonl has lost the line that held
    it. Per day, not one last id: a day the clock once ran ahead to must not hide today's ids.

    Written after each append to a temporary file renamed over it, so a kill leaves it whole (old
    or new), and not fsync'd: the line it names was fsync'd first, so a power cut that loses this
    write loses an id the journal still holds (a temporary file left is removed at start). A
    missing, damaged or unreadable file is read as naming nothing (the journal decides alone, as
    before it existed); what this process handed out is kept in memory as well, so a file that
    cannot be written does not make an id repeat while memoryd runs.

    The same is written to index/ids-handed-out.json (the floor), and both are read, each day's
    highest number kept: the floor outlives memory/ removed whole, which takes .ids.json and the
    journal together. It is written only where index/ is a folder (a restore's staged home has
    none) and its failures are not said: .ids.json is the record, the floor its spare. So a
    floor number memoryd cannot have handed out is damage, said once and passed over, never a
    day's last id that refuses every write (idcopies.py); and which copy gave a day's number is
    kept (source), so a line naming the number names the file it came from."""

    def __init__(self, home: Home):
        self.path = home.memory / ISSUED_NAME
        self.floor = home.index_dir / FLOOR_NAME
        self._held: dict[str, dict[str, int]] = {}
        self._found: dict[str, dict[str, int]] | None = None  # the file, read once
        # The earliest id of each kind handed out here, kept for good (the days are not): what
        # tells, however long after, that the journal lost lines from its start (lostbefore.py).
        self._first: dict[str, str] = {}
        # Where each day's number came from: .ids.json's path, the floor's, or None for one this
        # memoryd handed out since it started.
        self._from: dict[str, dict[str, Path | None]] = {}
        self._lock = threading.Lock()

    def last(self, kind: str) -> str | None:
        """The latest id of kind ("edit" or "pending") handed out here, or None."""
        with self._lock:
            days = self._days(kind, self._file())
        if not days:
            return None
        day = max(days)
        return f"{'p-' if kind == 'pending' else ''}{day}-{days[day]:04d}"

    def days(self, kind: str) -> dict[str, int]:
        """The last number of kind handed out on each day kept ({day: number})."""
        with self._lock:
            return self._days(kind, self._file())

    def number(self, kind: str, day: str) -> int:
        """The NNNN of the last id of kind handed out on day (0: none)."""
        with self._lock:
            return self._days(kind, self._file()).get(day, 0)

    def first(self, kind: str) -> str | None:
        """The earliest id of kind handed out here as far as is known: the one kept, or (in a
        file written before it was kept) the first id of the earliest day kept; None for none."""
        with self._lock:
            found = self._file()
            kept = self._first.get(kind)
            days = self._days(kind, found)
        if kept is not None:
            return kept
        if not days:
            return None
        return f"{'p-' if kind == 'pending' else ''}{min(days)}-0001"

    def source(self, kind: str, day: str) -> Path | None:
        """The copy number(kind, day) was read from (memory/.ids.json or the floor), or None
        when this memoryd handed it out since it started (its line was journalled then)."""
        with self._lock:
            self._file()
            return self._from.get(kind, {}).get(day)

    def handed_out(self, kind: str, value: str) -> bool:
        """Whether value, written as memoryd writes ids, was surely handed out here: its number
        is at most the last of its day. (Of a day no longer kept: not said.)"""
        day, number = order(value)
        if not day or number < 1 or not value.endswith(f"{day}-{number:04d}"):
            return False
        return number <= self.number(kind, day)

    def note(self, kind: str, value: str) -> None:
        """value was just handed out (its line is written): kept, in memory and in the file."""
        day, number = order(value)
        if not day:
            return
        with self._lock:
            found = self._file()
            days = self._days(kind, found)
            first = self._first.get(kind)
            if first is None and days:
                first = f"{'p-' if kind == 'pending' else ''}{min(days)}-0001"
            if first is None or order(value) < order(first):
                first = value
            self._first[kind] = first
            if number > days.get(day, 0):
                self._from.setdefault(kind, {})[day] = None
            days[day] = max(days.get(day, 0), number)
            self._held[kind] = _latest(days)
            kept: dict[str, object] = {k: d for k in _ISSUED_KINDS if (d := self._days(k, found))}
            kept[FIRST_KEY] = dict(self._first)
            self._write(json.dumps(kept, sort_keys=True).encode("utf-8"), kind, value)

    def carry_to(self, other: "Issued") -> None:
        """other keeps the ids handed out here too: a restore's staged journal, whose forget
        lines must go on after them, not after the archive's older ones."""
        with self._lock:
            found = self._file()
            held = {kind: self._days(kind, found) for kind in _ISSUED_KINDS}
        for kind, days in held.items():
            prefix = "p-" if kind == "pending" else ""
            for day, number in days.items():
                other.note(kind, f"{prefix}{day}-{number:04d}")
            first = self.first(kind)
            if first is not None:
                other.note(kind, first)

    def _days(self, kind: str, found: dict[str, dict[str, int]]) -> dict[str, int]:
        days = dict(found.get(kind, {}))
        for day, number in self._held.get(kind, {}).items():
            days[day] = max(days.get(day, 0), number)
        return _latest(days)

    def _file(self) -> dict[str, dict[str, int]]:
        """What the file held when first asked: read once, as only this memoryd writes it, so
        that an append does not read it again (what it hands out is in _held)."""
        if self._found is None:
            found = self._read(self.path, said=True)
            for kind, days in found.items():
                self._from[kind] = dict.fromkeys(days, self.path)
            # The floor counts where it is higher: .ids.json went with memory/, or is older;
            # never past what memoryd could have handed out (idcopies.py).
            floor = self._read(self.floor, said=False)
            idcopies.take_floor(found, floor, self.floor, self.path, self._from, NUMBER_MOST)
            self._found = found
        return self._found

    def _write(self, data: bytes, kind: str, value: str) -> None:
        try:
            atomic_write(self.path, data, durable=False)
        except OSError as e:
            why = e if isinstance(e, NotRegular) else e.strerror
            log.warning("%s: the last %s id (%s) not kept: %s", self.path, kind, value, why)
        try:
            if os.path.isdir(self.floor.parent):
                atomic_write(self.floor, data, durable=False)
        except OSError:
            pass  # the spare: .ids.json above is the record, and says its own failure

    def _read(self, path, said: bool) -> dict[str, dict[str, int]]:
        """One copy's ids; {} when it is missing or not usable (said only for .ids.json)."""
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
            value = json.loads(data.decode("utf-8")) if len(data) <= ISSUED_MAX else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            if data and said:
                log.warning("%s: damaged; the journal alone gives the next ids", path)
            return {}
        firsts = value.get(FIRST_KEY)
        for kind, pattern in _ISSUED_KINDS.items():
            first = firsts.get(kind) if isinstance(firsts, dict) else None
            if isinstance(first, str) and pattern.match(first):
                kept = self._first.get(kind)
                if kept is None or order(first) < order(kept):
                    self._first[kind] = first
        return {kind: _days_of(value.get(kind), pattern) for kind, pattern in _ISSUED_KINDS.items()}


def remove_floor_leftovers(home: Home) -> None:
    """At start: a temporary file of the floor's a kill left (the floor is whole, old or new)."""
    for left in home.index_dir.glob(f".{FLOOR_NAME}.*.tmp"):
        try:
            left.unlink()
        except OSError as e:
            log.warning("%s: a leftover temporary file cannot be removed: %s", left, e.strerror)


# The days kept per kind: a clock set back or forward by weeks is far outside what this guards.
ISSUED_DAYS = 32
_DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def _latest(days: dict[str, int]) -> dict[str, int]:
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
