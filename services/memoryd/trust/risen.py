"""memory/labels.jsonl: the labels memoryd has seen each session rise to, kept outside the index.

The index is disposable (spec 6): the owner deletes it when it is damaged, and memoryd starts a
new one when it finds it so. What the index held of a session's label (labelkept.py) must not
leave with it: a log whose untrusted tool result was cut out by hand would be read again from a
clean label, and what the session said after reading untrusted content recalled as trusted. The
journal keeps the label of a session that wrote to memory (journallabels.py), not of one that
only read. So each time the index or the witness first sees a session's label rise above a clean
session's (private, trusted), or brokerd reports it stricter than recorded (monotone.py), one line
is appended here, fsync'd:

    {"session": "web1", "class": "private", "untrusted": true}

a session id and a label, no text. A session rises at most three times (untrusted, secret, both),
so the file holds at most three lines a session. A fresh index reads it as a floor beside the
journal (labelkept.floor): a log that ends laxer than the label recorded here is read again at it.

The file is memoryd's record of this home's sessions, like the journal: a backup holds it, and a
restore lays the archive's lines with this home's own added (carry), never fewer. A line that
does not parse (a hand edit) is skipped with one log line; the others stand. A line longer than
any label memoryd writes is passed over unread, a piece at a time, and each session it names is
taken at the strictest label (risenlong.py), said in one line. A line ends at an LF,
a CR or a CR LF (bytes.splitlines), as the file has always been read: one saved with CR line ends
by an editor is its labels, not one long line passed over. Read once per process
and after that only what it gained (a stat a look); a file replaced (a restore) is read again whole.
"""

import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from memoryd.home import Home, append_line, atomic_write, open_read
from memoryd.index.journallabels import CLEAN, Label, stricter
from memoryd.journal.boundedfile import Lines, with_lines
from memoryd.trust.risenlong import STRICTEST, Named
from proto.labels import CLASS_RANK
from proto.messages import is_session_id

log = logging.getLogger(__name__)

FILE = "labels.jsonl"
MOST_HOMES = 8  # homes whose file is kept in memory (memoryd has one; tests make many)


@dataclass
class _Read:
    device: int = 0
    inode: int = 0
    offset: int = 0
    labels: dict[str, Label] = field(default_factory=dict)
    said: bool = False  # a damaged line was logged
    said_long: bool = False  # a line too long to be a label was


_lock = threading.Lock()
_homes: "OrderedDict[str, _Read]" = OrderedDict()


def path(home: Home):
    return home.memory_file(FILE)


def label(home: Home, session: str) -> Label | None:
    """The strictest label this file records for session, or None (nothing above clean)."""
    with _lock:
        return _look(home).labels.get(session)


def rise(home: Home, session: str, seen: Label) -> None:
    """Record that session was seen at label seen, when that is stricter than clean and than what
    the file records of it. A failure to write is logged and the caller goes on: the index or the
    witness still holds the label, and the next rise tries again."""
    seen = stricter(CLEAN, seen)
    if seen == CLEAN or not is_session_id(session):
        return
    with _lock:
        read = _look(home)
        had = read.labels.get(session)
        if had is not None and stricter(had, seen) == had:
            return
        line = json.dumps({"session": session, "class": seen[0], "untrusted": seen[1]})
        if not os.path.isdir(home.memory):
            return  # no memory kept in this home (an index alone, in a tool or a test)
        try:
            append_line(path(home), line)
        except OSError as e:
            log.warning(
                "%s: session %s's label (%s) not recorded (%s); the index holds it meanwhile",
                path(home),
                session,
                _said(seen),
                e.strerror or e,
            )
            return
        read.labels[session] = stricter(had or CLEAN, seen)


def rise_all(home: Home, seen: Iterable[tuple[str, Label]]) -> int:
    """rise for many sessions at once (an index that holds labels the file lacks gives them to
    it at open): the lines the file lacks go in one append, one write and one fsync, never one
    a session, which at thousands of sessions held memoryd's start for seconds to minutes. As
    with rise, each line is on disk before this returns; a crash within the write leaves the
    lines before the cut whole, and the torn one is skipped (a line of its own is begun after
    it) while the sessions it and those after it named are added at the next call. How many
    sessions' labels were recorded; a failure to write is logged and 0 returned (the index
    still holds them, and the next open tries again)."""
    with _lock:
        read = _look(home)
        raised: dict[str, Label] = {}
        for session, label in seen:
            label = stricter(CLEAN, label)
            if label == CLEAN or not is_session_id(session):
                continue
            had = raised.get(session) or read.labels.get(session) or CLEAN
            if stricter(had, label) != had:
                raised[session] = stricter(had, label)
        if not raised or not os.path.isdir(home.memory):
            return 0
        lines = [
            json.dumps({"session": s, "class": label[0], "untrusted": label[1]})
            for s, label in raised.items()
        ]
        try:
            # The lines joined are one append_line: json.dumps puts no newline inside a line.
            append_line(path(home), "\n".join(lines))
        except OSError as e:
            log.warning(
                "%s: %d sessions' labels not recorded (%s); the index holds them meanwhile",
                path(home),
                len(raised),
                e.strerror or e,
            )
            return 0
        read.labels.update(raised)
        return len(raised)


def carry(home: Home, staged: Home) -> int:
    """Add this home's lines to a restore's staged file (atomically), so that the file laid holds
    every label either recorded: the home's sessions stay as memoryd saw them. How many sessions'
    labels were added."""
    with _lock:
        mine = dict(_look(home).labels)
    theirs = _Read()
    _read_on(staged, theirs)
    merged = {s: stricter(theirs.labels.get(s, CLEAN), seen) for s, seen in mine.items()}
    added = [s for s, seen in merged.items() if theirs.labels.get(s) != seen]
    if not added:
        return 0
    lines = "".join(
        json.dumps({"session": s, "class": merged[s][0], "untrusted": merged[s][1]}) + "\n"
        for s in added
    )
    atomic_write(path(staged), with_lines(path(staged), lines.encode()))  # never read whole
    return len(added)


def _look(home: Home) -> _Read:
    """The file of home as it is now (the caller holds _lock)."""
    read = _homes.pop(str(home.root), None) or _Read()
    _homes[str(home.root)] = read
    while len(_homes) > MOST_HOMES:
        _homes.popitem(last=False)
    _read_on(home, read)
    return read


def _read_on(home: Home, read: _Read) -> None:
    """Take what the file gained since read.offset; all of it when it was replaced or shrank."""
    try:
        with open_read(path(home)) as f:
            st = os.fstat(f.fileno())
            same = (st.st_dev, st.st_ino) == (read.device, read.inode)
            if same and st.st_size == read.offset:
                return
            if not same or st.st_size < read.offset:
                read.offset, read.labels = 0, {}
            f.seek(read.offset)
            # A block of whole lines at a time; a line still being written is read next time.
            # Lines end at CR too, so the bound on a line is the bound on a label.
            # A line too long for a label is searched as it passes for the sessions it names.
            named = Named()
            lines = Lines(f, st.st_size - read.offset, cr=True, passed=named)
            for _, block in lines:
                _take(home, read, block)
    except FileNotFoundError:
        read.device = read.inode = read.offset = 0
        read.labels = {}
        return
    except OSError as e:  # a folder or FIFO there, no permission: what was read stands
        if not read.said:
            read.said = True
            log.warning("%s: not read (%s); the labels read so far stand", path(home), e)
        return
    for session in named.sessions:
        read.labels[session] = STRICTEST
    if lines.long and not read.said_long:
        read.said_long = True
        log.warning(
            "%s: %s longer than any label memoryd writes (damaged): passed over unread, %s; the "
            "labels of its other lines stand, and a session's label is never taken laxer than "
            "the index or the journal records it",
            path(home),
            _numbers(lines.long),
            named.said(),
        )
    read.device, read.inode, read.offset = st.st_dev, st.st_ino, read.offset + lines.done


def _take(home: Home, read: _Read, block: bytes) -> None:
    """The labels of block's lines, each raising its session's label in read."""
    for raw in block.splitlines():
        taken = _parse(raw)
        if taken is None:
            if raw.strip() and not read.said:
                read.said = True
                log.warning("%s: a line that is not a session's label is skipped", path(home))
            continue
        session, seen = taken
        read.labels[session] = stricter(read.labels.get(session, CLEAN), seen)


def _parse(raw: bytes) -> tuple[str, Label] | None:
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    session, klass, untrusted = record.get("session"), record.get("class"), record.get("untrusted")
    if not is_session_id(session) or not isinstance(untrusted, bool):
        return None
    # A class that is none memoryd writes (a hand edit) is taken as the highest: fail closed.
    return session, (
        klass if isinstance(klass, str) and klass in CLASS_RANK else "secret",
        untrusted,
    )


def _numbers(long: list[int]) -> str:
    if len(long) == 1:
        return f"line {long[0]} is"
    more = f" and {len(long) - 5:,} more" if len(long) > 5 else ""
    return f"lines {', '.join(str(n) for n in long[:5])}{more} are"


def _said(seen: Label) -> str:
    return f"{seen[0]}, {'untrusted' if seen[1] else 'trusted'}"
