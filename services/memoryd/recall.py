"""Recall: search the index, tag each hit, render the answer, label it (spec 5).

Each hit starts with one of three source tags, so the model can weigh it: identity for entries
moved out of memory.md or user.md, memory for records and notes of clean sessions and for dropped
entries, memory-tainted for records and notes of sessions that had read untrusted content. The
result's class is the highest among the hits (at least private), and it is untrusted if any hit is
memory-tainted.
"""

import datetime as dt
import os
import sqlite3
import threading
from dataclasses import dataclass, field

from memoryd import topk
from memoryd.defuse import defuse
from memoryd.home import FILE_MODE, Home, ensure_dir, fsync_dir, open_file
from memoryd.query import match_expression, query_terms
from memoryd.recallline import RecallLine
from memoryd.textcut import hit_snippet
from proto.labels import Label, higher_class

# The FTS5 query on its own: what the benchmark runs directly to compare with recall.
SEARCH = "SELECT rowid, text FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
# A hit's source.
SOURCE = "SELECT kind, session, record, time, role, class, untrusted FROM sources WHERE rowid = ?"
# At most how long a recall log line waits for its fsync, in seconds.
SYNC_INTERVAL = 0.2
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

    def source(self) -> dict:
        """What the recall log keeps of the hit."""
        return {"kind": self.kind, "session": self.session, "record": self.record, "tag": self.tag}


@dataclass(frozen=True)
class RecallResult:
    text: str
    label: Label
    hits: list[Hit] = field(default_factory=list)


def search(conn: sqlite3.Connection, query: str, k: int) -> list[Hit]:
    """At most k hits for the query, best first (bm25); none for a query without any term.

    The hits are the spec's query's (topk.py finds them without scoring every row), each with its
    source and a snippet cut without loading the whole text (textcut.py), all in one read
    transaction so that a commit in between cannot mix two states of the index.
    """
    expression = match_expression(query)
    if expression is None:
        return []
    terms = query_terms(query)
    conn.execute("BEGIN")
    try:
        hits = []
        for rowid in topk.best_rowids(conn, terms, expression, k):
            source = conn.execute(SOURCE, (rowid,)).fetchone()
            if source is None:
                continue
            kind, session, record, time, role, klass, untrusted = source
            text = hit_snippet(conn, rowid, terms)
            hits.append(Hit(kind, session, record, time, role, klass, bool(untrusted), text))
        return hits
    finally:
        conn.execute("COMMIT")


def render(query: str, hits: list[Hit]) -> str:
    """The answer to the model: each hit's line then its snippet, or the no-matches sentence."""
    if not hits:
        return f'(no matches for "{query}")'
    lines = []
    for position, hit in enumerate(hits, 1):
        lines.append(hit.header(position))
        lines.append(defuse(hit.snippet))
    return "\n".join(lines)


def result_label(hits: list[Hit]) -> Label:
    """The highest class among the hits (at least private); untrusted if any is memory-tainted."""
    klass = "private"
    for hit in hits:
        klass = higher_class(klass, hit.klass)
    return Label(klass=klass, untrusted=any(hit.tag == "memory-tainted" for hit in hits))


def result(query: str, hits: list[Hit]) -> RecallResult:
    return RecallResult(text=render(query, hits), label=result_label(hits), hits=hits)


def log_line(
    when: str,
    session: str,
    query: str,
    k: int,
    hits: list[Hit],
    by: str | None = None,
    *,
    partial: bool = False,
) -> str:
    """One line of recalls/YYYY-MM.jsonl (RecallLine)."""
    line = RecallLine(
        time=when, session=session, query=query, k=k, hits=[hit.source() for hit in hits]
    )
    if by is not None:
        line.by = by
    if partial:
        line.partial = True
    return line.dump_line()


class RecallLog:
    """recalls/YYYY-MM.jsonl: one line per recall, written before the recall answers.

    Each line is one write to a file opened for appending, so a crash of memoryd loses none; the
    fsync runs on a background thread, so no recall waits for the disk: at most the lines of the
    last SYNC_INTERVAL before a power cut can be lost, and the log only feeds hit counts.
    """

    def __init__(self, home: Home):
        self.home = home
        self._lock = threading.Lock()
        self._month: str | None = None
        self._fd: int | None = None
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="recall-log", daemon=True)
        self._flusher.start()

    def append(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        when = dt.datetime.now(dt.UTC)
        with self._lock:
            if self._fd is None or self._month != f"{when:%Y-%m}":
                self._open(when)
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
        self._dirty.set()

    def _open(self, when: dt.datetime) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
        ensure_dir(self.home.recalls)
        path = self.home.recalls_month(when)
        self._fd = open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        self._month = f"{when:%Y-%m}"
        fsync_dir(path.parent)

    def _sync(self) -> None:
        with self._lock:
            fd = None if self._fd is None else os.dup(self._fd)
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _flush_loop(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait()
            # Gather the lines of a short while into one fsync, and wake this thread seldom: each
            # wake-up takes the interpreter lock from the recalls.
            self._stopping.wait(SYNC_INTERVAL)
            self._dirty.clear()
            self._sync()

    def close(self) -> None:
        """fsync what was written and stop the background thread."""
        self._stopping.set()
        self._dirty.set()
        self._flusher.join()
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None
