"""The label memoryd's own journal holds for each session: the strictest taint and untrusted flag
its memory calls were journalled with (journal.py: a session's edit line holds the session, its
call, its taint and untrusted).

The index takes a session's label from its log (sessionrows.py), and the owner may rewrite a log:
one that lost its untrusted tool result would have what the session said after it indexed as
trusted. The journal is memoryd's own record of what the session was when it wrote: a log whose
reading ends less strict than that was altered, and the indexer gives its rows the journal's
label too (indexer.index_session_part). This holds when the index itself was removed, or the log
was removed while memoryd was stopped, as long as the session wrote to memory.

Cost: the journal is read once per process (memoryd, a reindex's build) and after that only what
its month files gained: a look stats the month files and reads nothing more from one whose file
and size did not change, so a catch-up costs what it cost. A month is read a chunk at a time (it
can hold hundreds of megabytes, and memoryd's memory is bounded), and only the lines that can
raise a label are parsed (a byte search for "untrusted": true or "secret" first). Labels only
grow: a month file rewritten or removed by hand takes nothing away from what was read of it.
"""

import logging
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import BinaryIO

from memoryd.home import MONTH_FILE, Home, open_read
from memoryd.journal.wholelines import WholeLines
from proto.jsonread import loads_or_none
from proto.labels import CLASS_RANK, higher_class
from proto.messages import is_session_id

log = logging.getLogger("memoryd.index.indexer")

# How many homes' journals are kept (memoryd has one; tests make many).
MOST_HOMES = 8
# How many bytes before the offset read are kept to tell an append from a rewrite.
TAIL_BYTES = 64
# What a line that may raise a label holds, whatever spacing a writer used. The spacing leaves out
# \n and \r, which end a line (as bytes.splitlines splits), so that a whole chunk of lines is
# searched at once.
RAISES = re.compile(rb'"untrusted"[ \t\f\v]*:[ \t\f\v]*true|"secret"')
# How many bytes of a month file are read at a time.
CHUNK = 1 << 20
CLEAN = ("private", False)

Label = tuple[str, bool]


@dataclass
class _Month:
    """How far one month file was read: its file, the offset, the bytes before it."""

    device: int
    inode: int
    offset: int
    tail: bytes


@dataclass
class _Journal:
    months: dict[str, _Month] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    said: set[str] = field(default_factory=set)  # month files whose failure was logged


_lock = threading.Lock()
_homes: "OrderedDict[str, _Journal]" = OrderedDict()


def label(home: Home, session: str) -> Label | None:
    """The strictest label the journal holds for session's own memory calls, or None when it
    holds none stricter than a clean session's (private, trusted)."""
    with _lock:
        journal = _homes.pop(str(home.root), None) or _Journal()
        _homes[str(home.root)] = journal
        while len(_homes) > MOST_HOMES:
            _homes.popitem(last=False)
        _refresh(home, journal)
        return journal.labels.get(session)


def stricter(a: Label, b: Label | None) -> Label:
    """The stricter of two labels, each part on its own (class and untrusted)."""
    if b is None:
        return a
    return higher_class(a[0], b[0]), a[1] or b[1]


def below(a: Label, b: Label | None) -> bool:
    """True when label a is less strict than b in class or untrusted."""
    return b is not None and stricter(a, b) != a


def _refresh(home: Home, journal: _Journal) -> None:
    try:
        names = sorted(n for n in os.listdir(home.edits) if MONTH_FILE.match(n))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        _say(journal, str(home.edits), e)
        return
    for name in names:
        try:
            _read_month(home, journal, name)
        except OSError as e:
            _say(journal, name, e)


def _say(journal: _Journal, name: str, error: OSError) -> None:
    """One line per file (the index goes on with what it has read of the journal)."""
    if name not in journal.said:
        journal.said.add(name)
        log.warning(
            "journal %s: not read for the sessions' labels (%s); the labels read so far stand",
            name,
            error.strerror or error,
        )


def _read_month(home: Home, journal: _Journal, name: str) -> None:
    path = home.edits / name
    month = journal.months.get(name)
    st = os.stat(path, follow_symlinks=False)
    same = month is not None and (st.st_dev, st.st_ino) == (month.device, month.inode)
    if same and month is not None and st.st_size == month.offset:
        return  # nothing gained: a stat is all a look costs
    with open_read(path) as f:
        start = 0
        if same and month is not None and st.st_size > month.offset:
            kept = max(0, month.offset - TAIL_BYTES)
            f.seek(kept)
            if f.read(month.offset - kept) == month.tail:
                start = month.offset  # an append: only what it added
        f.seek(start)
        end, tail = _scan(f, st.st_size - start, journal.labels)
    offset = start + end
    if len(tail) < min(TAIL_BYTES, offset) and month is not None:
        tail = (month.tail + tail)[-min(TAIL_BYTES, offset) :]
    journal.months[name] = _Month(st.st_dev, st.st_ino, offset, tail)


def _scan(f: BinaryIO, size: int, labels: dict[str, Label]) -> tuple[int, bytes]:
    """Take the labels of the whole lines in the next size bytes of f, CHUNK bytes at a time
    (wholelines.py). Returns how many bytes the whole lines took and their last TAIL_BYTES
    bytes."""
    lines, tail = WholeLines(f, size, CHUNK), b""
    for data, cut in lines:
        _take_all(data, cut, labels)
        tail = (tail + data[max(0, cut - TAIL_BYTES) : cut])[-TAIL_BYTES:]
        del data  # not held while the next block is read
    return lines.done, tail


def _take_all(data: bytes, end: int, labels: dict[str, Label]) -> None:
    """_take each line of data[:end] (a line ends at \n or \r, as bytes.splitlines splits) that
    RAISES matches, searching data itself so that a line that cannot raise a label is never
    copied."""
    at = 0
    while (m := RAISES.search(data, at, end)) is not None:
        first = data.rfind(b"\n", 0, m.start()) + 1
        first = data.rfind(b"\r", first, m.start()) + 1 or first
        at = data.find(b"\n", m.end(), end)
        at = end if at == -1 else at
        cr = data.find(b"\r", m.end(), at)
        at = at if cr == -1 else cr
        _take(labels, data[first:at])


def _take(labels: dict[str, Label], line: bytes) -> None:
    """Raise the label of the session whose memory call the line journals, if it is one."""
    record = loads_or_none(line)
    if not isinstance(record, dict):
        return  # a damaged line: the journal's own readers name it
    session, call = record.get("session"), record.get("call")
    # A session's memory call has a call id; the owner's edits (promote, import) have none.
    if not is_session_id(session) or not isinstance(call, str) or not call:
        return
    taint = record.get("taint")
    klass = higher_class(taint, "private") if taint in CLASS_RANK else "private"
    found = (klass, record.get("untrusted") is True)
    if found != CLEAN:
        labels[session] = stricter(labels.get(session, CLEAN), found)
