"""The index rows holding a forgotten text as prepare found them, taken by the writer job.

Finding every row that holds a text (carriers.find) reads every row the full-text index matches:
about two seconds for a text 150,000 records hold, and the writer held for them is every other
write waiting. A forget's prepare finds them on a reader, before the writer is taken, and marks the
index as it was just before (Mark): the lineage of memoryd's last commit (a new one whenever memoryd
deletes rows, builds the file, or finds it written by another program: search/generation.py), the
highest rowid, and each log's progress. Inside the writer, while the lineage stands and the index
is memoryd's own state, every change since added rows past that rowid, or updated rows in place;
the only update that moves a row to another key is a session log read again (index/reread.py), and
it changes that log's progress. So the writer looks for the text again only in the rows added since
and in the rows of a session whose log's progress changed, and takes the rest as prepare found it.
When the lineage changed, the index is not memoryd's own state, or the texts are not prepare's, the
whole find is made again, on the writer, as before.
"""

import sqlite3
from dataclasses import dataclass, field

from memoryd.data import carriers
from memoryd.data.erasing import Found
from memoryd.index import indexer
from memoryd.search import generation

_LOGS = (
    "SELECT o.log, p.records, o.bytes, o.class, o.untrusted, o.tail FROM offsets o"
    " LEFT JOIN progress p ON p.log = o.log"
)
_SESSION_LOG = indexer.log_name("\0").split("\0")  # sessions/ID/0.jsonl around the session ID


@dataclass(frozen=True)
class Mark:
    """The index as a reader saw it: what tells the writer later what changed since."""

    lineage: str
    last: int  # the highest rowid of sources
    logs: dict[str, tuple]  # each log's progress (records, bytes, label, tail)


def mark(conn: sqlite3.Connection) -> Mark | None:
    """The index now; None when its state is not one memoryd committed (nothing to go by)."""
    record, figures = generation.current(conn)
    if record is None or record.figures != figures:
        return None
    (last,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM sources").fetchone()
    logs = {row[0]: tuple(row[1:]) for row in conn.execute(_LOGS)}
    return Mark(record.lineage, int(last), logs)


def _session(log: str) -> str | None:
    head, tail = _SESSION_LOG
    if log.startswith(head) and log.endswith(tail) and len(log) > len(head) + len(tail):
        return log[len(head) : -len(tail)]
    return None


def touched(before: Mark, now: Mark) -> set[str] | None:
    """The sessions whose log's progress changed from before to now; None when the rows since
    cannot be told apart (another lineage: rows were deleted, or the file is another)."""
    if now.lineage != before.lineage or now.last < before.last:
        return None
    # a log new since has every row past before.last
    changed = {log for log in before.logs if before.logs[log] != now.logs.get(log)}
    # notes.md's rows are added or deleted, never renumbered in place: its rows since are past
    # before.last, and a renumbering deletes (another lineage)
    changed.discard(indexer.NOTES_LOG)
    sessions = {_session(log) for log in changed}
    return None if None in sessions else {s for s in sessions if s is not None}


@dataclass
class Seen:
    """What prepare found (find), for the writer to take while it still holds (again)."""

    texts: list[str] | None = None
    mark: Mark | None = None
    rows: dict[str, list[int]] = field(default_factory=dict)

    def find(self, index, texts: list[str]) -> dict[str, list[int]]:
        """carriers.find, on a reader, the index marked first: a commit between the mark and the
        find is either in the rows past the mark or a change the writer sees as one."""
        with index.reader() as conn:
            self.mark = mark(conn)
        self.rows = carriers.find(index, texts)
        self.texts = list(texts)
        return dict(self.rows)  # its lists are read, never changed

    def again(self, index, texts: list[str]) -> dict[str, list[int]]:
        """On the writer: what find() found, with what changed since looked for again."""
        if self.mark is None or self.texts != list(texts):
            return carriers.find(index, texts)
        with index.reader() as conn:
            now = mark(conn)
        sessions = touched(self.mark, now) if now is not None else None
        if sessions is None:
            return carriers.find(index, texts)
        rows = dict(self.rows)
        if sessions:  # their records may have other numbers now: found again below
            rows = {key: v for key, v in rows.items() if _of(key) not in sessions}
        for key, rowids in carriers.find_since(index, texts, self.mark.last, sessions).items():
            rows[key] = sorted(set(rows.get(key, ())) | set(rowids))
        return rows


def _of(key: str) -> str | None:
    """The session a key (session:ID:N) is a record of; None for a note's."""
    if not key.startswith("session:"):
        return None
    return key.removeprefix("session:").rpartition(":")[0]


@dataclass
class Prepared(Found):
    """Found, with the index rows prepare found holding the text (Seen)."""

    seen: Seen = field(default_factory=Seen)
