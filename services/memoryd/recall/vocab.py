"""Per-term row counts and the index figures bm25 needs, cached per index generation.

FTS5's idf needs n(t), the rows holding term t. FTS5 keeps no such count: it counts a term's whole
list every time (fts5vocab does the same). The exact top-k search (topk.py) needs n(t) for every
query term, so it is counted once per index generation and kept: a rare term's with a bounded FTS5
count (at most topk.COUNT_LIMIT + 1 rows read), a common term's from fts5vocab.

A generation is what the index holds between two commits: the key is the file's identity with
FTS5's averages record (rows, tokens) and structure record (its segments, and a counter that every
write moves on). A commit changes the structure record, so a count is never used past the commit
that changes it; a reindex makes a new file. The fts5vocab table lives in each connection's temp
schema: nothing is added to the index file. Everything here runs on reader threads, never on the
event loop.

Counts carried from one generation to the next: a commit that only added rows (a session's new
records, the common case while sessions run) leaves every n(t) as it was plus the new rows that
hold t, which FTS5 counts cheaply with `rowid > the last rowid counted` (it seeks in the term's
list). Only added means: the same file, no deletion since (the indexer raises the file's
user_version in the transaction that deletes rows, so a reader sees it in step with
the rows), and the table's rows grown by exactly the rows above the old last rowid (which also
catches a writer other than memoryd's indexer). Anything else counts afresh.
"""

import functools
import os
import sqlite3
import threading
from dataclasses import dataclass, field

from memoryd.index import indexer
from memoryd.search import bm25

BOUNDED_COUNT = "SELECT count(*) FROM (SELECT 1 FROM hits WHERE hits MATCH ? LIMIT ?)"
VOCAB_ROW = "memoryd_vocab_row"
_LOCK = threading.Lock()
# Counts kept per generation, at most (a few MB).
MAX_TERMS = 100_000


@dataclass
class Stats:
    """One index generation's figures: rows, average row length, rows per term (filled lazily),
    and the counts of an earlier generation still to be brought up to date (token: (count,
    rowid counted up to))."""

    key: tuple
    rows: int
    avgdl: float
    last_rowid: int = 0
    deletions: int = 0
    docs: dict[str, int] = field(default_factory=dict)
    carried: dict[str, tuple[int, int]] = field(default_factory=dict)


DELETIONS = f"PRAGMA {indexer.DELETIONS_PRAGMA}"
# FTS5 walks its rows in rowid order and seeks to a rowid bound: both are cheap.
LAST_ROWID = "SELECT coalesce((SELECT rowid FROM hits ORDER BY rowid DESC LIMIT 1), 0)"
ADDED = "SELECT count(*) FROM hits WHERE rowid > ?"
ADDED_HOLDING = "SELECT count(*) FROM hits WHERE hits MATCH ? AND rowid > ?"


# Per database file: the figures of the last generation seen.
_stats: dict[str, Stats] = {}


@functools.lru_cache(maxsize=1)
def probe() -> tuple[sqlite3.Connection, threading.Lock]:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.execute(indexer.SCHEMA[0])  # the same tokenizer as the index's hits table
    conn.execute("CREATE VIRTUAL TABLE probe USING fts5vocab(hits, 'instance')")
    return conn, threading.Lock()


@functools.lru_cache(maxsize=50_000)
def tokens(term: str) -> tuple[str, ...]:
    """The tokens FTS5's tokenizer makes of a query term (usually one: the term, folded)."""
    conn, lock = probe()
    with lock:
        conn.execute("BEGIN")
        try:
            conn.execute("INSERT INTO hits (rowid, text) VALUES (1, ?)", (term,))
            found = conn.execute("SELECT term FROM probe ORDER BY offset").fetchall()
        finally:
            conn.execute("ROLLBACK")
    return tuple(token for (token,) in found)


def ensure_vocab(conn: sqlite3.Connection) -> None:
    """The connection's fts5vocab table over hits, in its temp schema (nothing in the file)."""
    (found,) = conn.execute(
        "SELECT count(*) FROM temp.sqlite_master WHERE name = ?", (VOCAB_ROW,)
    ).fetchone()
    if found:
        return
    # A reader connection is query_only, which forbids even its temp schema.
    (query_only,) = conn.execute("PRAGMA query_only").fetchone()
    conn.execute("PRAGMA query_only = 0")
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{VOCAB_ROW}"
            " USING fts5vocab(main, hits, 'row')"
        )
    finally:
        conn.execute(f"PRAGMA query_only = {int(query_only)}")


def generation(conn: sqlite3.Connection) -> Stats:
    """The figures of the index as this transaction sees it, from cache when it has not changed."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    blocks = dict(
        conn.execute(
            "SELECT id, block FROM hits_data WHERE id IN (?, ?)",
            (bm25.AVERAGES_ID, bm25.STRUCTURE_ID),
        )
    )
    try:
        stat = os.stat(path)
        identity = (stat.st_ino, stat.st_dev)
    except OSError:
        identity = None
    key = (identity, blocks.get(bm25.AVERAGES_ID), blocks.get(bm25.STRUCTURE_ID))
    with _LOCK:
        before = _stats.get(path) if path else None
    if before is not None and before.key == key:
        return before
    rows, tokens_ = bm25.totals(blocks.get(bm25.AVERAGES_ID))
    (last_rowid,) = conn.execute(LAST_ROWID).fetchone()
    (deletions,) = conn.execute(DELETIONS).fetchone()
    stats = Stats(key, rows, tokens_ / rows if rows else 0.0, last_rowid, deletions)
    if before is not None and _only_added(conn, stats, before):
        with _LOCK:
            carried = dict(before.carried)
            carried.update((t, (n, before.last_rowid)) for t, n in before.docs.items())
        if len(carried) <= MAX_TERMS:
            stats.carried = carried
    if path:  # an in-memory database has no name to keep its figures under
        with _LOCK:
            _stats[path] = stats
    return stats


def _only_added(conn: sqlite3.Connection, now: Stats, before: Stats) -> bool:
    """Whether the index moved from before to now only by adding rows (module docstring)."""
    if before.key[0] is None or before.key[0] != now.key[0]:
        return False
    if before.deletions != now.deletions or now.last_rowid < before.last_rowid:
        return False
    (added,) = conn.execute(ADDED, (before.last_rowid,)).fetchone()
    return now.rows == before.rows + added


def docs(conn: sqlite3.Connection, stats: Stats, token: str, spelling: str, budget: int) -> int:
    """The rows holding token: an earlier generation's count plus the rows added since, or
    counted up to budget + 1 with FTS5 (cheap), beyond that from fts5vocab (which reads the
    whole list); kept for the generation."""
    with _LOCK:
        known = stats.docs.get(token)
        carried = stats.carried.get(token)
    if known is not None:
        return known
    if carried is not None:
        count, since = carried
        (added,) = conn.execute(ADDED_HOLDING, (f'"{spelling}"', since)).fetchone()
        with _LOCK:
            stats.docs[token] = count + added
        return count + added
    (count,) = conn.execute(BOUNDED_COUNT, (f'"{spelling}"', budget + 1)).fetchone()
    if count > budget:
        row = conn.execute(f"SELECT doc FROM temp.{VOCAB_ROW} WHERE term = ?", (token,)).fetchone()
        count = 0 if row is None else row[0]
    with _LOCK:
        if len(stats.docs) >= MAX_TERMS:
            stats.docs.clear()
        stats.docs[token] = count
    return count
