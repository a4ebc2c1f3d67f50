"""The edit ids the journal's lines hold, kept per month file and brought up to date by reading only
what a month gained: which ids more than one line holds (show, undo and log ask it, twice.py), which
month files hold an id, and the highest number of each day (the next id, journal.py).

Why a module of its own: a month can hold hundreds of megabytes. Searched whole for an id at every
show and undo, and counted whole at every log, the journal cost those commands a read of all of it
(most of a second at 100,000 edits), where they should cost the lines they show. And the next id of
a day cannot be read from a file's tail once the clock went back over a month's end and came
forward again: the newest file then ends on a line of the day before while the day's own lines are
further up (months.py), so counting from the tail alone handed out an id the journal held.

So, per month, this keeps how far it was read (whole lines only), the file's inode, the size and
mtime it had, the hash of the bytes just before that offset, and the ids its lines start with (per
day, the runs of numbers held, so a month of 100,000 edits is kept in a few runs; an id met again
in the month is counted apart). A month that is the same file, grown, with those bytes unchanged, is
read on from the offset (memoryd only appends); any other (replaced, shrunk, changed without
growing, rewritten just before the offset) is read again from its start, as forgetread.py does. A
rewrite in place that keeps the file, grows it and leaves the bytes before the offset as they were
goes unseen: a hand edit of older lines, not memoryd's. The bytes after the last newline (a line
being written, or torn by a crash) are read again each time the month changes and count as a line,
but are kept only once their line ends: the id a torn line starts with is never handed out again.

A line is found as memoryd writes it, starting with {"id": "<id>" (scan.py, twice.py).
"""

import bisect
import hashlib
import logging
import os
import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from memoryd.home import MONTH_FILE, open_read
from memoryd.journal.wholelines import WholeLines

log = logging.getLogger(__name__)

# How many bytes of a month file are read at a time.
CHUNK = 4 << 20
# How many bytes before the offset read tell an append from a rewrite.
TAIL_CHECK = 256
# How many journals are kept (memoryd has one; a restore reads a staged copy's, tests make many).
MOST_JOURNALS = 8

_AFTER_NEWLINE = re.compile(rb'\n\{"id": "(\d{4}-\d{2}-\d{2})-(\d{4,})"')
_AT_START = re.compile(rb'\{"id": "(\d{4}-\d{2}-\d{2})-(\d{4,})"')
_ID = re.compile(r"(\d{4}-\d{2}-\d{2})-(\d{4,})\Z")

Stamp = tuple[int, int, int]  # inode, size, mtime


class Runs:
    """A set of numbers as sorted runs [starts[i], ends[i]]: the numbers of a day's ids, which
    memoryd hands out one after another, so a day of any length is a run or a few."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, n: int) -> bool:
        """Take n; False when it is held already."""
        starts, ends = self.starts, self.ends
        if ends and n == ends[-1] + 1:
            ends[-1] = n
            return True
        i = bisect.bisect_right(starts, n) - 1
        if i >= 0 and n <= ends[i]:
            return False
        left = i >= 0 and ends[i] == n - 1
        right = i + 1 < len(starts) and starts[i + 1] == n + 1
        if left and right:
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
        elif left:
            ends[i] = n
        elif right:
            starts[i + 1] = n
        else:
            starts.insert(i + 1, n)
            ends.insert(i + 1, n)
        return True

    def __contains__(self, n: int) -> bool:
        i = bisect.bisect_right(self.starts, n) - 1
        return i >= 0 and n <= self.ends[i]

    def top(self) -> int:
        return self.ends[-1] if self.ends else 0

    def common(self, other: "Runs") -> list[int]:
        """The numbers both hold."""
        out: list[int] = []
        i = j = 0
        while i < len(self.starts) and j < len(other.starts):
            low = max(self.starts[i], other.starts[j])
            high = min(self.ends[i], other.ends[j])
            out.extend(range(low, high + 1))
            if self.ends[i] < other.ends[j]:
                i += 1
            else:
                j += 1
        return out


@dataclass
class Ids:
    """The ids of a month's lines: per day the numbers held (written as memoryd writes them,
    NNNN at least four digits), the lines beyond the first of an id met again, and ids written
    otherwise (a hand edit: 2026-12-01-00001) counted as they are."""

    days: dict[str, Runs] = field(default_factory=dict)
    again: Counter[str] = field(default_factory=Counter)
    odd: Counter[str] = field(default_factory=Counter)

    def copy(self) -> "Ids":
        days = {}
        for day, runs in self.days.items():
            days[day] = Runs()
            days[day].starts, days[day].ends = list(runs.starts), list(runs.ends)
        return Ids(days, Counter(self.again), Counter(self.odd))

    def take(self, day: str, digits: str) -> None:
        number = int(digits)
        if digits != f"{number:04d}":
            self.odd[f"{day}-{digits}"] += 1
        elif not self.days.setdefault(day, Runs()).add(number):
            self.again[f"{day}-{digits}"] += 1

    def lines(self, edit_id: str) -> int:
        """How many of the month's lines start with edit_id."""
        m = _ID.match(edit_id)
        if m is None:
            return 0
        day, digits = m.groups()
        if digits != f"{int(digits):04d}":
            return self.odd[edit_id]
        runs = self.days.get(day)
        return (1 + self.again[edit_id]) if runs is not None and int(digits) in runs else 0

    def top(self, day: str) -> int:
        runs = self.days.get(day)
        best = runs.top() if runs is not None else 0
        for odd in self.odd:
            if odd[:10] == day:
                best = max(best, int(odd[11:]))
        return best


@dataclass
class Month:
    inode: int
    offset: int  # the bytes of whole lines read
    tail: str  # the sha256 of the TAIL_CHECK bytes before offset
    ids: Ids
    seen: tuple[int, int]  # the file's size and mtime when it was read
    stamp: Stamp
    rest: str | None = None  # the id the bytes after offset start with (a line not yet whole)

    def lines(self, edit_id: str) -> int:
        return self.ids.lines(edit_id) + (self.rest == edit_id)

    def top(self, day: str) -> int:
        top = self.ids.top(day)
        if self.rest is not None and self.rest[:10] == day:
            top = max(top, int(self.rest[11:]))
        return top


class Held:
    """What the journal's lines hold, over its month files as they were when asked."""

    def __init__(self, months: dict[str, Month]):
        self._months = dict(sorted(months.items()))
        self._twice: list[str] | None = None

    def count(self, edit_id: str) -> int:
        """How many lines of the journal start with edit_id."""
        return sum(month.lines(edit_id) for month in self._months.values())

    def files(self, edit_id: str) -> list[str]:
        """The names of the month files holding a line of edit_id, oldest first."""
        return [name for name, month in self._months.items() if month.lines(edit_id)]

    def top(self, day: str) -> int:
        """The highest number of an id of day (YYYY-MM-DD) any line holds (0: none)."""
        return max((month.top(day) for month in self._months.values()), default=0)

    def twice(self) -> list[str]:
        """Every id more than one line holds, in order."""
        if self._twice is None:
            found: set[str] = set()
            by_day: dict[str, list[Runs]] = {}
            for month in self._months.values():
                found.update(month.ids.again)
                found.update(month.ids.odd)
                if month.rest is not None:
                    found.add(month.rest)
                for day, runs in month.ids.days.items():
                    by_day.setdefault(day, []).append(runs)
            for day, all_runs in by_day.items():
                for i, runs in enumerate(all_runs):
                    for other in all_runs[i + 1 :]:
                        found.update(f"{day}-{n:04d}" for n in runs.common(other))
            self._twice = sorted(i for i in found if self.count(i) > 1)
        return list(self._twice)


@dataclass
class _Journal:
    months: dict[str, Month] = field(default_factory=dict)
    stamps: tuple | None = None
    held: Held = field(default_factory=lambda: Held({}))


_lock = threading.Lock()
_journals: "OrderedDict[Path, _Journal]" = OrderedDict()


def held(folder: Path) -> Held:
    """The ids the month files of folder (a home's edits/) hold now, reading only what each month
    gained since it was last asked. OSError when a month cannot be read."""
    with _lock:
        journal = _journals.pop(folder, None) or _Journal()
        _journals[folder] = journal
        while len(_journals) > MOST_JOURNALS:
            _journals.popitem(last=False)
        return _look(folder, journal)


def _stamp(where: Path) -> Stamp | None:
    try:
        st = os.stat(where, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _look(folder: Path, journal: _Journal) -> Held:
    try:
        names = sorted(n for n in os.listdir(folder) if MONTH_FILE.match(n))
    except FileNotFoundError:
        names = []
    stamps = tuple((name, _stamp(folder / name)) for name in names)
    if journal.stamps == stamps:
        return journal.held
    months: dict[str, Month] = {}
    for name, st in stamps:
        if st is not None:
            months[name] = _month(journal.months.get(name), folder / name, st)
    journal.months = months
    journal.held = Held(months)
    journal.stamps = stamps
    return journal.held


def _month(month: Month | None, where: Path, st: Stamp) -> Month:
    if month is not None and month.stamp == st:
        return month
    with open_read(where) as f:
        now = os.fstat(f.fileno())
        start, ids = 0, Ids()
        if month is not None and _goes_on(f, month, now):
            # a copy: an answer given before (Held) is read outside the lock
            start, ids = month.offset, month.ids.copy()
        offset, rest = _scan(f, start, now.st_size, ids)
        tail = _tail(f, offset)
    found = _AT_START.match(rest)
    rest_id = f"{found.group(1).decode()}-{found.group(2).decode()}" if found else None
    done = (now.st_ino, now.st_size, now.st_mtime_ns)
    return Month(now.st_ino, offset, tail, ids, (now.st_size, now.st_mtime_ns), done, rest_id)


def _goes_on(f: BinaryIO, month: Month, now: os.stat_result) -> bool:
    """Whether the file is the one read, grown or not, with the bytes before the offset read
    unchanged: only then is what was read of it still what it holds. A file changed without
    growing was not appended to (memoryd's appends grow it): it is read again whole."""
    if now.st_ino != month.inode or now.st_size < month.offset:
        return False
    if month.seen != (now.st_size, now.st_mtime_ns) and now.st_size == month.seen[0]:
        return False
    return _tail(f, month.offset) == month.tail


def _tail(f: BinaryIO, offset: int) -> str:
    start = max(0, offset - TAIL_CHECK)
    return hashlib.sha256(os.pread(f.fileno(), offset - start, start)).hexdigest()


def _scan(f: BinaryIO, start: int, size: int, ids: Ids) -> tuple[int, bytes]:
    """Take the ids the whole lines of f from start to size start with into ids, CHUNK bytes at
    a time. Returns the offset the whole lines end at, and the bytes after it."""
    f.seek(start)
    lines = WholeLines(f, size - start, CHUNK)
    for data, cut in lines:
        first = _AT_START.match(data)  # each block starts a line
        if first is not None:
            ids.take(first.group(1).decode(), first.group(2).decode())
        for day, digits in _AFTER_NEWLINE.findall(data, 0, cut):
            ids.take(day.decode(), digits.decode())
        del data
    return start + lines.done, lines.rest
