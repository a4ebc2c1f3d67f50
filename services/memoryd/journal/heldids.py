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
mtime it had, the hash of the bytes just before that offset, and the ids its lines start with
(idruns.py: per day the runs of numbers held, so a month of 100,000 edits is kept in a few runs; an
id met again in the month is counted apart). A month that is the same file, grown, with those bytes
unchanged, is read on from the offset (memoryd only appends); any other (replaced, shrunk, changed
without growing, rewritten just before the offset) is read again from its start, as forgetread.py
does. A rewrite in place that keeps the file, grows it and leaves the bytes before the offset as
they were goes unseen: a hand edit of older lines, not memoryd's. The bytes after the last newline
(a line being written, or torn by a crash) are read again each time the month changes and count as a
line, but are kept only once their line ends: the id a torn line starts with is never handed out
again.

A line is found as memoryd writes it, starting with {"id": "<id>" (scan.py, twice.py).

For memoryd's own home (keep_saved, at start) what was read is saved to index/journal-ids.json
(heldsaved.py: at start, and once it covers SAVE_BYTES more of the journal than the saved copy), so
a start reads only what was appended since.
"""

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from memoryd.home import MONTH_FILE, Home, open_read
from memoryd.journal import heldsaved
from memoryd.journal.idform import DAY_B, NUMBER_B
from memoryd.journal.idruns import Ids, Month, Runs, Stamp, id_of
from memoryd.journal.wholelines import WholeLines

log = logging.getLogger(__name__)

# How many bytes of a month file are read at a time.
CHUNK = 4 << 20
# How many bytes before the offset read tell an append from a rewrite.
TAIL_CHECK = 256
# How many more journal bytes read than the saved copy covers before it is saved again.
SAVE_BYTES = 4 * 1024 * 1024
# How many journals are kept (memoryd has one; a restore reads a staged copy's, tests make many).
MOST_JOURNALS = 8

_AT_START = re.compile(rb'\{"id": "(' + DAY_B + rb")-(" + NUMBER_B + rb')"')
_AFTER_NEWLINE = re.compile(rb"\n" + _AT_START.pattern)


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

    def any_in(self, day: str, low: int, high: int) -> bool:
        """Whether a line holds an id of day numbered in (low, high]."""
        return any(month.any_in(day, low, high) for month in self._months.values())

    def twice(self) -> list[str]:
        """Every id more than one line holds, in order."""
        if self._twice is None:
            found: set[str] = set()
            by_day: dict[str, list[Runs]] = {}  # by the ids' form, day[/width]
            for month in self._months.values():
                found.update(month.ids.again)
                if month.rest is not None:
                    found.add(month.rest)
                for day, runs in month.ids.days.items():
                    by_day.setdefault(day, []).append(runs)
            for day, all_runs in by_day.items():
                for i, runs in enumerate(all_runs):
                    for other in all_runs[i + 1 :]:
                        found.update(id_of(day, n) for n in runs.common(other))
            self._twice = sorted(i for i in found if self.count(i) > 1)
        return list(self._twice)


@dataclass
class _Journal:
    months: dict[str, Month] = field(default_factory=dict)
    stamps: tuple | None = None
    held: Held = field(default_factory=lambda: Held({}))
    unsaved: int = 0  # bytes read since the saved copy


_lock = threading.Lock()
_journals: "OrderedDict[Path, _Journal]" = OrderedDict()
# The homes whose reading is saved (memoryd's own), by their edits/ folder, kept apart from
# _journals so that one dropped from there is loaded and saved again.
_kept: dict[Path, Home] = {}


def keep_saved(home: Home) -> None:
    """At memoryd's start: read the journal's ids from the saved copy on (only what was appended
    since), save what was read, and keep the copy up to date from now on. A month that cannot be
    read is left for the first question to say."""
    with _lock:
        _kept[home.edits] = home
        journal = _journal(home.edits)
        try:
            _look(home.edits, journal, force_save=True)
        except OSError as e:
            log.warning("%s: the journal's ids are not read now: %s", home.edits, e)


def held(folder: Path) -> Held:
    """The ids the month files of folder (a home's edits/) hold now, reading only what each month
    gained since it was last asked. OSError when a month cannot be read."""
    with _lock:
        return _look(folder, _journal(folder))


def _journal(folder: Path) -> _Journal:
    journal = _journals.pop(folder, None)
    if journal is None:
        home = _kept.get(folder)
        journal = _Journal(months=heldsaved.load(home) if home is not None else {})
    _journals[folder] = journal
    while len(_journals) > MOST_JOURNALS:
        _journals.popitem(last=False)
    return journal


def _stamp(where: Path) -> Stamp | None:
    try:
        st = os.stat(where, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _look(folder: Path, journal: _Journal, force_save: bool = False) -> Held:
    try:
        names = sorted(n for n in os.listdir(folder) if MONTH_FILE.match(n))
    except FileNotFoundError:
        names = []
    stamps = tuple((name, _stamp(folder / name)) for name in names)
    if journal.stamps == stamps and not force_save:
        return journal.held
    months: dict[str, Month] = {}
    for name, st in stamps:
        if st is not None:
            before = journal.months.get(name)
            try:
                months[name] = _month(before, folder / name, st)
            except FileNotFoundError:
                continue  # removed since it was listed: as if it were not there
            if months[name] is not before:
                journal.unsaved += months[name].read
    journal.months = months
    journal.held = Held(months)
    journal.stamps = stamps
    home = _kept.get(folder)
    if home is not None and (journal.unsaved >= SAVE_BYTES or (force_save and journal.unsaved)):
        if heldsaved.save(home, months):
            journal.unsaved = 0
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
    seen = (now.st_size, now.st_mtime_ns)
    return Month(now.st_ino, offset, tail, ids, seen, done, rest_id, offset - start)


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
