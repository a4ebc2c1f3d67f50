"""Per-term row counts and the index figures bm25 needs, cached per index generation (issue 14).

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
"""

import functools
import os
import sqlite3
import threading
from dataclasses import dataclass, field

from memoryd import bm25, indexer

BOUNDED_COUNT = "SELECT count(*) FROM (SELECT 1 FROM hits WHERE hits MATCH ? LIMIT ?)"
VOCAB_ROW = "memoryd_vocab_row"
_LOCK = threading.Lock()
# Counts kept per generation, at most (a few MB).
MAX_TERMS = 100_000


@dataclass
class Stats:
    """One index generation's figures: rows, average row length, rows per term (filled lazily)."""

    key: tuple
    rows: int
    avgdl: float
    docs: dict[str, int] = field(default_factory=dict)


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
        stats = _stats.get(path) if path else None
        if stats is not None and stats.key == key:
            return stats
    rows, tokens_ = bm25.totals(blocks.get(bm25.AVERAGES_ID))
    stats = Stats(key, rows, tokens_ / rows if rows else 0.0)
    if path:  # an in-memory database has no name to keep its figures under
        with _LOCK:
            _stats[path] = stats
    return stats


def docs(conn: sqlite3.Connection, stats: Stats, token: str, spelling: str, budget: int) -> int:
    """The rows holding token: counted up to budget + 1 with FTS5 (cheap), beyond that
    from fts5vocab (which reads the whole list), kept for the generation."""
    with _LOCK:
        known = stats.docs.get(token)
    if known is not None:
        return known
    (count,) = conn.execute(BOUNDED_COUNT, (f'"{spelling}"', budget + 1)).fetchone()
    if count > budget:
        row = conn.execute(f"SELECT doc FROM temp.{VOCAB_ROW} WHERE term = ?", (token,)).fetchone()
        count = 0 if row is None else row[0]
    with _LOCK:
        if len(stats.docs) >= MAX_TERMS:
            stats.docs.clear()
        stats.docs[token] = count
    return count
