"""The hybrid mode's background batches (hybrid.Hybrid.step): which pending rows the next batch
takes, read cut to what the model reads; a batch that fails split until the row that fails is
alone, and that row skipped; the vectors written; and what the embedder is held up by, for
`bxctl memory stats` (progress.py).

A row is read cut (embed.cut, in SQL): a row can be up to [index] max_record_bytes (1 GiB), and
the model reads its first 128 tokens. A batch whose asking fails (the child dies on it, answers
nonsense, does not answer in time) is tried again with half its rows at the next poll, until one
row fails alone; that row is tried again, up to ALONE_MOST times as the failures back off
(hybrid.py), and then the child is asked for PROBE. When it embeds that, the failure was the
row's: the row is skipped, taken off the pending list without a vector (found by its words), and
one line names its session and record; the next row is taken at once. When it does not, the
child cannot embed anything now (it cannot start, the machine is too busy): nothing is skipped,
and the row is tried again as the failures back off. A skipped row is tried again by a reindex,
which embeds every row that has no vector. A batch embedded lets the next take twice as many
rows, up to EMBED_BATCH.
"""

import logging
import sqlite3

from memoryd.modes import hybrid_tables
from memoryd.modes.embed import CHARS_PER_TOKEN, MAX_TOKENS
from memoryd.modes.int8 import pack

log = logging.getLogger(__name__)

EMBED_BATCH = 32
# How many times a row that fails alone is tried before the child is asked for PROBE (the
# asking already tries a child that died on it twice: embedworker.Worker.embed).
ALONE_MOST = 2
# The text as the model reads it: cut as embed.cut cuts (SQLite's substr counts characters, as
# Python does); another type as stored (a number edited in by hand is embedded as nothing).
_TEXT = "CASE WHEN typeof(h.text) = 'text' THEN substr(h.text, 1, :most) ELSE h.text END"
_MOST = MAX_TOKENS * CHARS_PER_TOKEN
_TAKE = (
    f"SELECT p.rowid, {_TEXT} FROM vector_pending p LEFT JOIN hits h ON h.rowid = p.rowid"  # noqa: S608
    " ORDER BY p.rowid LIMIT :size"
)
_NOW = f"SELECT {_TEXT} FROM hits h WHERE h.rowid = :rowid"  # noqa: S608
# What the child is asked to embed when a row has failed alone: when it embeds this, the
# failure was the row's; when it does not, the child cannot embed anything now, and no row is
# skipped for it.
PROBE = "a short sentence any model reads"


class Batches:
    """The next batch's size, the failures of the row tried alone, and why embedding is paused
    (None: it is not). Used by the embedder thread alone; progress.py reads paused."""

    def __init__(self) -> None:
        self.size = EMBED_BATCH
        self.paused: str | None = None
        self.split = False  # the last failure halved its batch: tried again at the next poll
        self._alone = 0
        self._row: int | None = None  # the row tried alone, which failed _alone times

    def reset(self) -> None:
        """The index file was replaced: its rowids are other rows."""
        self.size, self.split, self._alone = EMBED_BATCH, False, 0

    def take(self, conn: sqlite3.Connection) -> list[tuple[int, object]]:
        """(rowid, text as the model reads it) of the next batch, in rowid order."""
        return conn.execute(_TAKE, {"most": _MOST, "size": self.size}).fetchall()

    def failed(self, rowids: list[int], error: BaseException) -> bool:
        """Asking for the vectors of rowids failed with error. True when they are one row that
        has failed alone ALONE_MOST times: it is skipped (skip()) if the child embeds PROBE."""
        self.paused = one_line(error)
        self.split = len(rowids) > 1
        if self.split:
            self.size, self._alone = max(1, len(rowids) // 2), 0
            return False
        if rowids[0] != self._row:
            self._row, self._alone = rowids[0], 0
        self._alone += 1
        return self._alone >= ALONE_MOST

    def skip(self, conn: sqlite3.Connection, row: tuple[int, object], name: object) -> None:
        """Take row (as take() read it) off the pending list without a vector, in a transaction
        of its own, and say so in one line naming its session and record. A row whose text is
        another by now (the file swapped meanwhile) stays pending."""
        rowid, text = row
        conn.execute("BEGIN IMMEDIATE")
        try:
            now = conn.execute(_NOW, {"most": _MOST, "rowid": rowid}).fetchone()
            where = conn.execute(
                "SELECT session, record FROM sources WHERE rowid = ?", (rowid,)
            ).fetchone()
            taken = None
            if now is not None and now[0] == text:
                taken = conn.execute("DELETE FROM vector_pending WHERE rowid = ?", (rowid,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if where is not None and taken is not None and taken.rowcount:  # else gone meanwhile
            log.warning(
                "index %s: session %s record %s is left without a vector, found by its words"
                " only: embedding it alone failed %d times (%s); a reindex tries it again",
                name,
                where[0],
                where[1],
                self._alone,
                self.paused,
            )
        self.paused, self._alone = None, 0

    def write(self, conn: sqlite3.Connection, rows: list, vectors, below=None) -> None:
        """Write the vectors of rows (as take() read them) in one transaction; then the next
        batch may be larger. below(generation, rowids) is told, before the commit, when the
        write raised recall_mode.generation (rows written below vectors already there), and
        below(generation, None) when that transaction did not commit (ann.Ann.below)."""
        raised = None
        conn.execute("BEGIN IMMEDIATE")
        try:
            raised = _write(conn, rows, vectors)
            if raised is not None and below is not None:
                below(*raised)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if raised is not None and below is not None:
                below(raised[0], None)
            raise
        self.paused, self.split, self._alone = None, False, 0
        self.size = min(EMBED_BATCH, self.size * 2)


def _write(conn: sqlite3.Connection, rows: list, vectors) -> tuple[int, list[int]] | None:
    """Write the vectors; (the generation raised to, the rowids written) when they lie below
    vectors already there, else None."""
    (highest,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM vectors").fetchone()
    raised: tuple[int, list[int]] | None = None
    if rows[0][0] < highest:
        # Below vectors already there (carried over by a reindex): readers must load the whole
        # matrix again, not only what lies above their highest rowid; the ANN is told which
        # rows they are, and adds them (annsteps.py).
        conn.execute(hybrid_tables.RAISE_GENERATION)
        (generation,) = conn.execute(f"SELECT {hybrid_tables.GENERATION}").fetchone()  # noqa: S608
        raised = (int(generation), [])
    for (rowid, text), vector in zip(rows, vectors, strict=True):
        now = conn.execute(_NOW, {"most": _MOST, "rowid": rowid}).fetchone()
        # Another row by now (a swap, a rewrite) stays pending; the same text past what the
        # model reads is the same vector.
        if (None if now is None else now[0]) != text:
            continue
        taken = conn.execute("DELETE FROM vector_pending WHERE rowid = ?", (rowid,))
        # A row deleted meanwhile left the pending list with its sources row.
        if taken.rowcount and text is not None:
            conn.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?)", (rowid, pack(vector)))
            if raised is not None:
                raised[1].append(rowid)
    return raised


def works(worker) -> bool:
    """Whether worker embeds PROBE (a row failed alone: was the failure the row's?)."""
    try:
        worker.embed([PROBE])
    except Exception:  # noqa: BLE001 - the row's own failure is the one reported
        return False
    return True


def one_line(error: BaseException) -> str:
    """error as the log and stats say it: its first line, its type when it has no text."""
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
