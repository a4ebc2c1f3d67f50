"""The ids a journal month's lines start with, kept as runs of numbers per day (heldids.py reads
them; heldsaved.py saves them): a module of its own so that the reading and its saved copy share
one shape, small however many edits a month holds.

memoryd hands a day's ids out one after another (NNNN from 0001, at least four digits), so a day
of any length is a run, or a few where the clock went back and forward again. An id written in
another form by hand (2026-12-01-00001, a number padded past four digits) is another id than the
one memoryd writes for that number: it is kept under its day and width (2026-12-01/5) so that it
is told apart and costs no more than memoryd's own. A line whose id was met before in the month
is counted apart (again), which is what says an id is held twice.
"""

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field

from memoryd.journal.idform import DAY, NUMBER

_ID = re.compile(rf"({DAY})-({NUMBER})\Z")


def form(day: str, digits: str) -> str:
    """The key an id's number is kept under: its day, with the width when it is not written as
    memoryd writes it."""
    return day if digits == f"{int(digits):04d}" else f"{day}/{len(digits)}"


def id_of(key: str, number: int) -> str:
    """The id the number of key (form()) stands for."""
    day, _, width = key.partition("/")
    return f"{day}-{number:0{int(width or 4)}d}"


class Runs:
    """A set of numbers as sorted runs [starts[i], ends[i]], apart and not touching."""

    def __init__(self, starts: list[int] | None = None, ends: list[int] | None = None) -> None:
        self.starts: list[int] = starts if starts is not None else []
        self.ends: list[int] = ends if ends is not None else []

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

    def any_in(self, low: int, high: int) -> bool:
        """Whether a number of (low, high] is held."""
        i = bisect.bisect_right(self.ends, low)
        return i < len(self.starts) and max(self.starts[i], low + 1) <= high

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
    """The ids of a month's lines: per form (day, or day/width) the numbers held, and how many
    lines beyond the first hold an id met again."""

    days: dict[str, Runs] = field(default_factory=dict)
    again: Counter[str] = field(default_factory=Counter)

    def copy(self) -> "Ids":
        days = {key: Runs(list(r.starts), list(r.ends)) for key, r in self.days.items()}
        return Ids(days, Counter(self.again))

    def take(self, day: str, digits: str) -> None:
        if not self.days.setdefault(form(day, digits), Runs()).add(int(digits)):
            self.again[f"{day}-{digits}"] += 1

    def lines(self, edit_id: str) -> int:
        """How many of the month's lines start with edit_id."""
        m = _ID.match(edit_id)
        if m is None:
            return 0
        day, digits = m.groups()
        runs = self.days.get(form(day, digits))
        return (1 + self.again[edit_id]) if runs is not None and int(digits) in runs else 0

    def top(self, day: str) -> int:
        """The highest number of an id of day (in any form) the month holds (0: none)."""
        return max((r.top() for key, r in self.days.items() if key[:10] == day), default=0)

    def any_in(self, day: str, low: int, high: int) -> bool:
        """Whether the month holds an id of day (written as memoryd writes ids) numbered in
        (low, high]."""
        runs = self.days.get(day)
        return runs is not None and runs.any_in(low, high)


Stamp = tuple[int, int, int]  # inode, size, mtime


@dataclass
class Month:
    """What heldids.py read of one month file (saved by heldsaved.py): its ids and how far."""

    inode: int
    offset: int  # the bytes of whole lines read
    tail: str  # the sha256 of the TAIL_CHECK bytes before offset
    ids: Ids
    seen: tuple[int, int]  # the file's size and mtime when it was read
    stamp: Stamp
    rest: str | None = None  # the id the bytes after offset start with (a line not yet whole)
    read: int = 0  # the bytes read to make it from the month before

    def lines(self, edit_id: str) -> int:
        return self.ids.lines(edit_id) + (self.rest == edit_id)

    def top(self, day: str) -> int:
        top = self.ids.top(day)
        if self.rest is not None and self.rest[:10] == day:
            top = max(top, int(self.rest[11:]))
        return top

    def any_in(self, day: str, low: int, high: int) -> bool:
        if self.ids.any_in(day, low, high):
            return True
        rest = self.rest
        return rest is not None and rest[:11] == f"{day}-" and low < int(rest[11:]) <= high
