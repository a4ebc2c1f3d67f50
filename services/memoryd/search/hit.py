"""One recall hit: where it is from, its class and taint, its snippet, and its rendered line.

Its own module so that the recall modes (modes/context.py, modes/hybrid.py) can build hits without
importing recall.py, which runs them.

A hit is built from its row of sources only when the row is as memoryd writes it (from_source):
a row damaged or edited by hand (an unknown class or kind, no time, a record that is not a number)
is left out of the answer, logged once, rather than failing every recall that finds it or
labelling the answer with a class that is not one; a reindex builds it again from the logs.
"""

import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.data.matching import NOTE_KINDS
from memoryd.index import dbname
from memoryd.journal.recallline import NOTE_TEXT_BYTES, note_digest
from proto.labels import is_class

log = logging.getLogger(__name__)

KINDS = ("session", "noted", "moved", "dropped")
# A row's first bytes of text, as textcut reads a snippet's (FTS5's content table, column c0).
NOTE_HEAD = "SELECT substr(CAST(c0 AS BLOB), 1, ?) FROM hits_content WHERE id = ?"
# Damaged rows already logged (index file, rowid), at most this many kept.
REPORTED_MOST = 1_000
# A row's time as the index stores it, which header() cuts by position: a row written otherwise
# (a year of three digits by an older memoryd) would be shown garbled, so it is damage to report.
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}")
_reported: set[tuple[bytes, int]] = set()
_reported_lock = threading.Lock()

_SAID = {
    "user": "the owner said",
    "assistant": "the assistant said",
    "call": "the assistant called",
}


@dataclass(frozen=True)
class Hit:
    kind: str  # session, noted, moved or dropped
    session: str
    record: int
    time: str
    role: str | None  # user, assistant, call; memory.md or user.md for moved and dropped
    klass: str
    untrusted: bool
    snippet: str
    # A note's digest (recallline.note_digest), which the recall log keeps beside its number:
    # stats tells the note by it after a hand edit of notes.md renumbered the notes.
    note: str | None = None

    @property
    def tag(self) -> str:
        if self.kind == "moved":
            return "identity"
        if self.kind == "dropped":
            return "memory"
        return "memory-tainted" if self.untrusted else "memory"

    def header(self, position: int) -> str:
        """The hit's line: [n] tag · where it is from · class."""
        when = f"{self.time[:10]} {self.time[11:16]} UTC"
        if self.kind in ("moved", "dropped"):
            origin = f"{self.kind} {self.time[:10]} from {self.role}"
        elif self.kind == "noted":
            origin = f"note, {when}, session {self.session}"
        else:
            origin = f"session {self.session}, {when}, {_SAID.get(self.role or '', 'said')}"
        return f"[{position}] {self.tag} · {origin} · {self.klass}"

    def source(self) -> dict[str, str | int]:
        """What the recall log keeps of the hit (RecallHit): a note's digest after the rest."""
        kept: dict[str, str | int] = {
            "kind": self.kind,
            "session": self.session,
            "record": self.record,
            "tag": self.tag,
        }
        if self.note is not None:
            kept["note"] = self.note
        return kept


def from_source(
    conn: sqlite3.Connection, rowid: int, source: tuple, snippet: Callable[[], str | None]
) -> Hit | None:
    """The hit of rowid from its sources row (kind, session, record, time, role, class,
    untrusted) and snippet() (None: the row holds no text), or None for a row that is not as
    memoryd writes it (logged once)."""
    kind, session, record, time, role, klass, untrusted = source
    wrong = _wrong(kind, session, record, time, role, klass, untrusted)
    cut = snippet() if wrong is None else None
    if cut is None:
        report_damaged(conn, rowid, wrong or "no text in hits")
        return None
    note = _note_digest(conn, rowid, kind, time, session) if kind in NOTE_KINDS else None
    return Hit(kind, session, record, time, role, klass, bool(untrusted), cut, note)


def _note_digest(
    conn: sqlite3.Connection, rowid: int, kind: str, time: str, session: str
) -> str | None:
    """The digest of the note of row rowid, from its text's first bytes as the index holds them
    (in the caller's read, with its sources row); None when the row holds no text."""
    row = conn.execute(NOTE_HEAD, (NOTE_TEXT_BYTES, rowid)).fetchone()
    if row is None or not isinstance(row[0], bytes):
        return None
    return note_digest(kind, time, session, row[0])


def _wrong(kind, session, record, time, role, klass, untrusted) -> str | None:
    """What is wrong with a sources row's values, or None."""
    checks = (
        ("kind", kind, kind in KINDS),
        ("session", session, isinstance(session, str) and bool(session)),
        ("record", record, type(record) is int),
        ("time", time, isinstance(time, str) and _TIME.match(time) is not None),
        ("role", role, role is None or isinstance(role, str)),
        ("class", klass, is_class(klass)),
        ("untrusted", untrusted, type(untrusted) is int and untrusted in (0, 1)),
    )
    for name, value, right in checks:
        if not right:
            return f"{name} {repr(value)[:40]}"
    return None


def report_damaged(conn: sqlite3.Connection, rowid: int, wrong: str) -> None:
    """Log, once per index file and row, that a row of sources is not as memoryd writes it."""
    path = dbname.main_file(conn)
    with _reported_lock:
        if (path, rowid) in _reported:
            return
        if len(_reported) >= REPORTED_MOST:
            _reported.clear()
        _reported.add((path, rowid))
    log.warning(
        "memory-index-damaged: %s: row %d of sources has %s; recall leaves it out until"
        " `bxctl reindex` builds the index again",
        os.fsdecode(path) if path else "(in memory)",
        rowid,
        wrong,
    )
