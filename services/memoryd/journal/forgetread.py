"""The journal's forget lines read as the journal grows: what forgets() answers, kept per month
file and brought up to date by reading only what the month gained.

Why a module of its own: a month can hold hundreds of megabytes and is appended to at every memory
write, while the forget lines are asked for at every recall and every catch-up part of a session
log, and at every start (forgottenwrite.mend). Read whole again after each write and at each
start, the journal cost time and memory in proportion to its whole length, not to what is new.

So, per month, this keeps how far it was read (whole lines only), the file's inode, size and
mtime, the hash of the bytes just before that offset, and what the forget lines read so far name
(forgetlines.parse's fold, line by line). A month that is the same file, grown, with those bytes
unchanged, is read on from the offset (a forget line is only ever appended); any other (replaced,
shrunk, changed without growing, rewritten just before the offset) is read again from its start.
A rewrite in place that keeps the file, grows it and leaves the bytes before the offset as they
were goes unseen, as in journal/byfile.py: a hand edit of the journal's older lines, not
memoryd's. The bytes after the last newline (a line being written, or torn by a crash) are read
again each time the month changes and count as they do in a whole read, but are kept only once
their line ends. A month is read a chunk at a time, and only the lines holding "forgot" are
parsed, so the answers are parse()'s of the whole month.

For memoryd's own home (keep_saved, at start) what was read is saved to index/journal-forgets.json
(atomically: once it covers SAVE_BYTES more of the journal than the saved copy, and at start), so a
start reads only what was appended since. The copy is derived and checked month by month as above
before use; a missing, damaged or stale one costs a read of the months it does not fit. It holds the
keys and digests the journal's forget lines hold, never text, as forgotten.jsonl does.
"""

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from memoryd.home import MONTH_FILE, Home, open_read
from memoryd.journal import forgetsaved
from memoryd.journal.forgetlines import NONE, Forgets, Forgot, Found, Month, Stamp, made, stamp
from memoryd.journal.wholelines import WholeLines

log = logging.getLogger("memoryd.journal.forgetlines")

# How many bytes of a month file are read at a time.
CHUNK = 1 << 20
# How many bytes before the offset read tell an append from a rewrite.
TAIL_CHECK = 256
# How many more journal bytes read than the saved copy covers before it is saved again.
SAVE_BYTES = 4 * 1024 * 1024
# How many journals are kept (memoryd has one; a restore reads a staged copy's, tests make many).
MOST_JOURNALS = 8
FORGOT = b'"forgot"'


@dataclass
class _Journal:
    months: dict[str, Month] = field(default_factory=dict)
    stamps: tuple | None = None
    answer: Forgets = NONE
    keep: bool = False  # saved to disk
    unsaved: int = 0  # bytes read since the saved copy


_lock = threading.Lock()
_journals: "OrderedDict[Path, _Journal]" = OrderedDict()
# The journal folders whose reading is saved (memoryd's own home), kept apart from _journals so
# that one dropped from there (a restore reads a staged copy's journal each time) is saved again.
_kept: set[Path] = set()


def keep_saved(home: Home) -> Forgets:
    """At memoryd's start, before the writer runs: read the journal's forget lines from the saved
    copy on, and keep the copy up to date from now on."""
    with _lock:
        _kept.add(home.edits)
        journal = _journal(home)
        return _look(home, journal, force_save=True)


def forgets(home: Home) -> Forgets:
    """What the journal's forget lines name: each line's "keys" (every key that forget listed),
    or, on a line written before forget lines held them, its "id" when that is a key (else the
    line is keyless): forgetlines.parse's answer over every month whole, read only as far as the
    months grew, and the same object while no month file changed. A month that cannot be read is
    skipped, said once per change of it."""
    with _lock:
        return _look(home, _journal(home))


def _journal(home: Home) -> _Journal:
    journal = _journals.pop(home.edits, None)
    if journal is None:
        journal = _Journal(months=forgetsaved.load(home))
    journal.keep = home.edits in _kept
    _journals[home.edits] = journal
    while len(_journals) > MOST_JOURNALS:
        _journals.popitem(last=False)
    return journal


def _look(home: Home, journal: _Journal, force_save: bool = False) -> Forgets:
    folder = home.edits
    try:
        names = sorted(n for n in os.listdir(folder) if MONTH_FILE.match(n))
    except OSError:
        return NONE
    stamps = tuple((name, stamp(folder / name)) for name in names)
    if journal.stamps == stamps and not force_save:
        return journal.answer
    keys: set[str] = set()
    texts: set[Forgot] = set()
    keyless: list[str] = []
    last, last_texts = NONE.last, NONE.last_texts
    for name, st in stamps:
        if st is None:
            continue
        month = _month(journal, folder / name, st)
        keys |= month.keys
        texts |= month.texts
        keyless += month.keyless
        if month is not NONE:
            last, last_texts = month.last, month.last_texts
    journal.months = {n: m for n, m in journal.months.items() if n in names}
    answer = made(keys, keyless, last, texts, last_texts)
    if answer != journal.answer:  # else the same object: forgotten.py's cache holds on it
        journal.answer = answer
    journal.stamps = stamps
    if journal.keep and (journal.unsaved >= SAVE_BYTES or (force_save and journal.unsaved)):
        if forgetsaved.save(home, journal.months):
            journal.unsaved = 0
    return journal.answer


def _month(journal: _Journal, where: Path, st: Stamp) -> Forgets:
    month = journal.months.get(where.name)
    if month is not None and month.stamp == st:
        return month.answer
    try:
        with open_read(where) as f:
            now = os.fstat(f.fileno())
            start, found = 0, Found()
            if month is not None and _goes_on(f, month, now):
                start, found = month.offset, month.found
            offset, line = _scan(f, start, now.st_size, found)
            tail = _tail(f, offset)
    except OSError as e:
        log.warning("%s: not read for forgotten keys: %s", where, e)
        # Said once per change of the file; the next change reads it from its start.
        journal.months[where.name] = Month(-1, 0, "", Found(), st, NONE)
        return NONE
    journal.unsaved += offset - start
    answer = found.answer()
    if FORGOT in line:  # counted as a whole read counts it, kept once its line ends
        also = found.copy()
        also.take(line)
        answer = also.answer()
    done = (now.st_ino, now.st_size, now.st_mtime_ns)
    seen = (now.st_size, now.st_mtime_ns)
    journal.months[where.name] = Month(now.st_ino, offset, tail, found, done, answer, seen)
    return answer


def _goes_on(f: BinaryIO, month: Month, now: os.stat_result) -> bool:
    """Whether the file is the one read, grown or not, with the bytes before the offset read
    unchanged: only then is what was read of it still what it holds. A file changed without
    growing was not appended to (memoryd's appends grow it): it is read again whole."""
    if now.st_ino != month.inode or now.st_size < month.offset:
        return False
    if month.seen is not None and month.seen != (now.st_size, now.st_mtime_ns):
        if now.st_size == month.seen[0]:
            return False
    return _tail(f, month.offset) == month.tail


def _tail(f: BinaryIO, offset: int) -> str:
    start = max(0, offset - TAIL_CHECK)
    return hashlib.sha256(os.pread(f.fileno(), offset - start, start)).hexdigest()


def _scan(f: BinaryIO, start: int, size: int, found: Found) -> tuple[int, bytes]:
    """Take the forget lines of the whole lines of f from start to size into found, CHUNK bytes at
    a time (wholelines.py). Returns the offset the whole lines end at, and the bytes after it (a
    last line without its newline)."""
    f.seek(start)
    lines = WholeLines(f, size - start, CHUNK)
    for data, cut in lines:
        _take_all(data, cut, found)
        del data  # not held while the next block is read
    return start + lines.done, lines.rest


def _take_all(data: bytes, end: int, found: Found) -> None:
    """Take each line of data[:end] (lines end at \\n, as parse() splits) that holds "forgot",
    searching data itself so that no other line is copied."""
    at = 0
    while (hit := data.find(FORGOT, at, end)) != -1:
        first = data.rfind(b"\n", 0, hit) + 1
        last = data.find(b"\n", hit, end)  # data[end - 1] is a newline
        found.take(data[first:last])
        at = last + 1
