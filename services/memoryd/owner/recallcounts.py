"""Hit counts per note from the recall log (recalls/, one line per recall with its hits), for
`bxctl memory stats`: they survive a reindex, as the index holds none. The owner's own searches
("by": "owner") are not counted. A month file is read a block of whole lines at a time, so stats
holds about a block whatever the file's size; a line whole in memoryd's own form (WHOLE_LINE) is
picked by its time and mark without parsing it, any other line validated as a RecallLine, and a
damaged one (edited by hand, or torn by a power cut: memoryd ends such a line at its next start)
is not counted, and said once per file with how many there were, in memoryd's log and in stats'
answer. A hit is counted for the note it named as notes.md is now (owner/notehits.py), which a
hand edit of notes.md may have renumbered.
"""

import datetime as dt
import logging
import re
from collections import Counter
from pathlib import Path

from memoryd.data.matching import NOTE_KINDS
from memoryd.home import Home, open_read
from memoryd.journal.linefile import parse_line
from memoryd.journal.recallline import RecallLine
from memoryd.owner.notehits import HitKey, NoteIds, unattributed_said
from proto.files import NotRegular, TooLarge
from proto.plural import counted

log = logging.getLogger("memoryd.owner.stats")


def why(error: OSError) -> str:
    """What is wrong with a file, in words that follow its name."""
    if isinstance(error, (NotRegular, TooLarge)):
        return f"is {error.strerror}"  # "is a FIFO, not a regular file"
    return error.strerror or str(error)


def months(since: dt.datetime, until: dt.datetime) -> list[str]:
    out, year, month = [], since.year, since.month
    while (year, month) <= (until.year, until.month):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


# What RecallLog writes (recall.log_line: compact JSON, time first, a hit's keys in this order, a
# note's digest last, the owner's mark after the hits, and "partial" or "mode" after it when set).
# Session ids are validated, so they hold no escapes; a query's quotes are escaped (and it holds
# no raw newline), so the mark's and the hits' unescaped quotes can only be their keys.
TIME_PREFIX = b'{"time":"'
OWNER_MARK = b',"by":"owner"'
NOTE_HIT = re.compile(
    rb'"kind":"(noted|moved|dropped)","session":"([A-Za-z0-9_-]*+)","record":([0-9]++)'
    rb',"tag":"[a-z-]*+"(?:,"note":"([0-9a-f]++)")?+\}'
)
_HIT = (
    rb'\{"kind":"[a-z]++","session":"[A-Za-z0-9_-]*+","record":[0-9]++,"tag":"[a-z-]++"'
    rb'(?:,"note":"[0-9a-f]++")?+\}'
)
# A line as memoryd writes it, whole: a line torn short by a power cut ends before its last "}",
# and is no such line even when what is left starts as one. (The query's escapes unrolled and
# every repeat possessive: a month of 200,000 recalls is checked in half a second.)
WHOLE_LINE = re.compile(
    rb'\{"time":"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})Z"'
    rb',"session":"[A-Za-z0-9_-]*+","query":"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+","k":[0-9]++'
    rb',"hits":\[(?:' + _HIT + rb"(?:," + _HIT + rb")*+)?+\]"
    rb'(?:,"by":"owner")?+(?:,"partial":true)?+(?:,"mode":"[a-z0-9_-]++")?+\}'
)
WHOLE_LINES = re.compile(rb"(?m)^" + WHOLE_LINE.pattern + rb"$")


def _whole_lines(data: bytes) -> int:
    """How many of data's lines are whole lines in memoryd's form."""
    return sum(1 for _ in WHOLE_LINES.finditer(data))


def _whole_times(data: bytes) -> list[bytes]:
    """The time (YYYY-MM-DDTHH:MM:SS) of each of data's lines whole in memoryd's form."""
    return [match[1] for match in WHOLE_LINES.finditer(data)]


def _hits(data: bytes) -> Counter:
    """The note hits in data's lines (each whole in memoryd's form), by HitKey."""
    counts: Counter = Counter()
    for (kind, session, number, note), hits in Counter(NOTE_HIT.findall(data)).items():
        key = (kind.decode(), session.decode(), int(number), note.decode() or None)
        counts[key] += hits
    return counts


def count_whole_month(data: bytes, cutoff: bytes) -> tuple[Counter, int] | None:
    """The fast way, for a month file memoryd wrote whole (every line in its own form) that lies
    entirely in the window (no line older than cutoff): one regular expression over the whole
    file, less the owner's lines. None when the file is not like that.

    Every line's time is checked, not the first line's alone: the recall log appends to the
    month the clock says, so after the clock went back within a month older lines follow newer
    ones."""
    start = len(TIME_PREFIX)
    if not data.startswith(TIME_PREFIX) or data[start : start + 19] < cutoff:
        return None
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    times = _whole_times(data)
    if len(times) != lines or min(times) < cutoff:
        return None
    counts = _hits(data)
    recalls = lines
    position = data.find(OWNER_MARK)
    while position != -1:
        line_start = data.rfind(b"\n", 0, position) + 1
        counts.subtract(_hits(data[line_start:position]))
        recalls -= 1
        line_end = data.find(b"\n", position)
        if line_end == -1:
            break
        position = data.find(OWNER_MARK, line_end)
    return +counts, recalls


def count_month(
    data: bytes, cutoff: bytes, path: Path | None = None, notes: NoteIds | None = None
) -> tuple[Counter, int]:
    """Note hits and agent recalls in one month file's bytes, from cutoff (YYYY-MM-DDTHH:MM:SS);
    the hits by the number of the note they name in notes (NoteIds), or by the number the line
    holds when notes is None.

    The lines whole in memoryd's form are picked by their time and the owner's mark without
    parsing them, and the hits found with one regular expression over the picked lines; any
    other line is validated as a RecallLine instead (a damaged one is skipped, naming path and
    the line)."""
    tally = _Tally(notes)
    tally.add(data, cutoff)
    return tally.said(path)


class _Tally:
    """The counts of a month file read a block of whole lines at a time (count_month, and
    note_hits' streaming), with the first damaged line kept to be said once for the file."""

    def __init__(self, notes: NoteIds | None = None) -> None:
        # Counted by the note's number now, only for the notes there are: a log edited or
        # carried in by a restore may name millions of others, and stats must hold no more than
        # notes.md and a block. A hit that names no note there is now is only counted as such.
        self.notes = notes
        self.counts: Counter = Counter()
        self.unattributed = 0
        self.recalls = 0
        self.lines = 0  # read so far, to number a damaged line within the file
        self.damaged = 0
        self.first = ""

    def add(self, data: bytes, cutoff: bytes) -> None:
        whole = count_whole_month(data, cutoff) if not self.lines else None
        if whole is not None:
            self._take(whole[0])
            self.recalls += whole[1]
            self.lines += data.count(b"\n")
            return
        start = len(TIME_PREFIX)
        picked: list[bytes] = []
        # One pass over the block when every line of it is whole (a month file's blocks after
        # its first, as a rule), rather than a match a line.
        every = _whole_lines(data) == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        for number, raw in enumerate(data.split(b"\n"), start=self.lines + 1):
            if not raw.strip():
                continue
            if every or WHOLE_LINE.fullmatch(raw):
                if raw[start : start + 19] >= cutoff and OWNER_MARK not in raw:
                    picked.append(raw)
                continue
            line = parse_line(raw, RecallLine)
            if isinstance(line, str):
                self.damaged += 1
                self.first = self.first or f"line {number} {line}"
                continue
            if line.by == "owner" or line.time[:19].encode() < cutoff:
                continue
            self.recalls += 1
            self._take(
                Counter(
                    (h.kind, h.session, h.record, h.note) for h in line.hits if h.kind in NOTE_KINDS
                )
            )
        self.lines += data.count(b"\n")
        self.recalls += len(picked)
        self._take(_hits(b"\n".join(picked)))

    def _take(self, counts: Counter) -> None:
        key: HitKey
        for key, hits in counts.items():
            number = key[2] if self.notes is None else self.notes.number_of(key)
            if number is None:
                self.unattributed += hits
            else:
                self.counts[number] += hits

    def too_long(self) -> None:
        self.lines += 1
        self.damaged += 1
        self.first = self.first or f"line {self.lines} is longer than {LONGEST_LINE:,} bytes"

    def said(self, path: Path | None) -> tuple[Counter, int]:
        if self.damaged:  # one line per file and stats, however many lines a hand edit spoilt
            more = f" and {counted(self.damaged - 1, 'line')} more" if self.damaged > 1 else ""
            log.warning("%s: %s%s; not counted", path or "recall log", self.first, more)
        return self.counts, self.recalls

    def damage(self, name: str) -> str | None:
        """The line stats' answer gives the damaged lines of the file it calls name."""
        if not self.damaged:
            return None
        return f"{name}: {counted(self.damaged, 'damaged line')} not counted ({self.first})"


# A month file is read a block of whole lines at a time: stats holds about a block, whatever the
# file's size. A line longer than LONGEST_LINE (memoryd writes none near it) is skipped unread.
BLOCK = 4 << 20
LONGEST_LINE = 16 << 20


def _count_file(f, cutoff: bytes, path: Path, notes: NoteIds | None = None) -> tuple[Counter, int]:
    return _tally_file(f, cutoff, notes).said(path)


def _tally_file(f, cutoff: bytes, notes: NoteIds | None = None) -> _Tally:
    tally, rest, skipping = _Tally(notes), b"", False
    while chunk := f.read(BLOCK):
        if skipping:  # within a line too long to count: up to its end
            end = chunk.find(b"\n")
            if end == -1:
                continue
            chunk, skipping = chunk[end + 1 :], False
        data = rest + chunk
        end = data.rfind(b"\n") + 1
        if end:
            tally.add(data[:end], cutoff)
        rest = data[end:]
        if len(rest) > LONGEST_LINE:
            tally.too_long()
            rest, skipping = b"", True
    if rest and not skipping:
        tally.add(rest, cutoff)
    return tally


def note_hits(
    home: Home,
    since: dt.datetime,
    until: dt.datetime,
    unread: list[str] | None = None,
    notes: NoteIds | None = None,
) -> tuple[Counter, int]:
    """Hits per note number in the window (the numbers in notes.md now of the notes they named,
    when notes is given; else the numbers the lines hold), and how many agent recalls it
    holds. A month file that is not a regular file (a FIFO, a link, a folder) is never waited
    on nor followed: it is not counted, and unread gets one line saying why; so do a file's
    damaged lines, and the note hits counted for no note."""
    counts: Counter = Counter()
    recalls = unattributed = 0
    cutoff = since.strftime("%Y-%m-%dT%H:%M:%S").encode()
    for month in months(since, until):
        path = home.recalls / f"{month}.jsonl"
        try:
            with open_read(path) as f:
                tally = _tally_file(f, cutoff, notes)
        except FileNotFoundError:
            continue
        except OSError as e:
            said = f"memory/recalls/{month}.jsonl: {why(e)}; not counted"
            log.warning("%s", said)
            if unread is not None:
                unread.append(said)
            continue
        month_counts, month_recalls = tally.said(path)
        if unread is not None and (damage := tally.damage(f"memory/recalls/{month}.jsonl")):
            unread.append(damage)
        counts.update(month_counts)
        recalls += month_recalls
        unattributed += tally.unattributed
    if unread is not None and unattributed:
        unread.append(unattributed_said(unattributed))
    return counts, recalls
