"""The index's generation: a record memoryd writes into the index in each commit of its own.

Recall caches per-term row counts (search/vocab.py) and may carry them from one state of the index
to a later one only when every change between was rows added by memoryd. Nothing in the file tells
that by itself: a new file can get the old one's inode, and a row updated in place by another
program leaves the row count and the last rowid as they were. So every transaction of memoryd's
that changes the index ends with this record (one row of the generation table):

- lineage: a random 128-bit value, new when memoryd creates the file, whenever memoryd deletes
  rows (the transaction raises the file's deletion count, schema.DELETIONS_PRAGMA), and whenever
  memoryd finds the index changed since its own last commit (another program wrote);
- serial: memoryd's commits within the lineage; within one lineage every step added rows only;
- figures: FTS5's averages and structure records as the commit leaves them. FTS5 writes them when
  it flushes its pending rows; a SAVEPOINT makes it flush before the record is written, so the
  record holds what the commit holds.

A reader whose FTS5 figures differ from the record's sees a state memoryd did not make (a write by
another program after memoryd's last commit), and trusts no cached figure for it.

A new file also keeps the row counts of its common terms (store_counts, one fts5vocab pass at the
end of a build, off the writer), under its lineage and last rowid: counting a common term's list
the first time a query holds it is what made recall's slowest queries, and within the lineage a
count stays exact as the rows added since are counted on top (search/vocab.py).
"""

import secrets
import sqlite3
from dataclasses import dataclass

from memoryd.search import bm25
from memoryd.search.schema import DELETIONS_PRAGMA, SCHEMA, TABLES

GENERATION_TABLE = "generation"
# The index's own table (schema.SCHEMA), made here in an index built before it existed.
CREATE = SCHEMA[TABLES.index(GENERATION_TABLE)].replace(
    "CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1
)
READ = f"SELECT lineage, serial, averages, structure FROM {GENERATION_TABLE} WHERE id = 1"
# Terms held by at least this many rows have their counts kept (a few hundred at a million rows;
# a rarer term's count costs well under a millisecond).
STORE_ABOVE = 5_000
BUILD_VOCAB = "memoryd_build_vocab"
# The row that holds the table's rows and last rowid when the counts were taken.
TOTALS_TERM = ""
STORED = "SELECT term, docs, since FROM term_counts WHERE lineage = ?"
WRITE = f"INSERT OR REPLACE INTO {GENERATION_TABLE} VALUES (1, ?, ?, ?, ?)"
FIGURES = "SELECT id, block FROM hits_data WHERE id IN (?, ?)"

Figures = tuple[bytes | None, bytes | None]


@dataclass(frozen=True)
class Record:
    lineage: str
    serial: int
    figures: Figures


@dataclass(frozen=True)
class Mark:
    """What a transaction found at its start: the record, whether the index was as the record
    says, and the deletion count."""

    record: Record | None
    own: bool
    deletions: int


def figures(conn: sqlite3.Connection) -> Figures:
    """FTS5's averages and structure records (None for each when there is no hits table)."""
    try:
        blocks = dict(conn.execute(FIGURES, (bm25.AVERAGES_ID, bm25.STRUCTURE_ID)))
    except sqlite3.OperationalError:
        return None, None
    return blocks.get(bm25.AVERAGES_ID), blocks.get(bm25.STRUCTURE_ID)


def read(conn: sqlite3.Connection) -> Record | None:
    """The record of memoryd's last commit, or None (an index memoryd has not written yet)."""
    try:
        row = conn.execute(READ).fetchone()
    except sqlite3.OperationalError:  # no such table
        return None
    if row is None:
        return None
    return Record(row[0], row[1], (row[2], row[3]))


def current(conn: sqlite3.Connection) -> tuple[Record | None, Figures]:
    """The record and the figures as this transaction sees them; the state is memoryd's own when
    the record is not None and its figures are these."""
    return read(conn), figures(conn)


def begin(conn: sqlite3.Connection) -> Mark:
    """Call at the start of a write transaction (before any change)."""
    record, now = current(conn)
    (deletions,) = conn.execute(f"PRAGMA {DELETIONS_PRAGMA}").fetchone()
    return Mark(record, record is not None and record.figures == now, deletions)


def seal(conn: sqlite3.Connection, mark: Mark | None = None) -> None:
    """Call last in a write transaction that changed the index, before its COMMIT: write the
    record of the state it commits. mark None: a new file (a new lineage)."""
    conn.execute("SAVEPOINT memoryd_generation")  # FTS5 flushes its pending rows here
    conn.execute("RELEASE memoryd_generation")
    now = figures(conn)
    (deletions,) = conn.execute(f"PRAGMA {DELETIONS_PRAGMA}").fetchone()
    if mark is None or mark.record is None or not mark.own or deletions != mark.deletions:
        lineage, serial = secrets.token_hex(16), 0
    elif mark.record.figures == now:
        return  # hits unchanged: the record still holds
    else:
        lineage, serial = mark.record.lineage, mark.record.serial + 1
    conn.execute(CREATE)
    conn.execute(WRITE, (lineage, serial, *now))


def store_counts(conn: sqlite3.Connection) -> None:
    """Keep the counts of the terms held by at least STORE_ABOVE rows, under the lineage seal()
    just wrote. Call after seal(), before the COMMIT of a build."""
    record = read(conn)
    if record is None:
        return
    rows, _tokens = bm25.totals(record.figures[0])
    (last,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM hits").fetchone()
    conn.execute(f"CREATE VIRTUAL TABLE temp.{BUILD_VOCAB} USING fts5vocab(main, hits, 'row')")
    try:
        conn.execute("DELETE FROM term_counts")
        conn.execute(
            "INSERT INTO term_counts VALUES (?, ?, ?, ?)",
            (TOTALS_TERM, rows, record.lineage, last),
        )
        conn.execute(
            f"INSERT INTO term_counts SELECT term, doc, ?, ? FROM temp.{BUILD_VOCAB}"
            " WHERE doc >= ?",
            (record.lineage, last, STORE_ABOVE),
        )
    finally:
        conn.execute(f"DROP TABLE temp.{BUILD_VOCAB}")


def stored_counts(conn: sqlite3.Connection, lineage: str) -> tuple[int, int, dict[str, int]] | None:
    """(rows, last rowid, counts) as store_counts() kept them in this lineage, or None."""
    try:
        found = conn.execute(STORED, (lineage,)).fetchall()
    except sqlite3.OperationalError:  # an index made before the table
        return None
    counts = {term: docs for term, docs, _since in found}
    totals = [(docs, since) for term, docs, since in found if term == TOTALS_TERM]
    if not totals:
        return None
    del counts[TOTALS_TERM]
    return totals[0][0], totals[0][1], counts
