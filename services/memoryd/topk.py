"""The spec's recall query, answered without scoring what cannot reach the top k (issue 14).

The spec's query, `hits MATCH '"a" OR "b" ...' ORDER BY rank LIMIT k`, scores every row that holds
any term: one common word puts hundreds of thousands of rows in play. The answer here is the same
rowids in the same order (bm25, ties by rowid, as FTS5's sorter leaves them), found MaxScore-style:

1. Each term's rows n(t) (fts5vocab, cached per index generation) gives its idf; a phrase adds at
   most idf * (k1 + 1) to any row's score.
2. The rarest terms (together at most RARE_BUDGET rows) are the essential ones; the others are the
   common ones. The candidates are the rows holding an essential term (fts5vocab instances: row and
   count, no text). Which candidates also hold a common term, and how often, comes from one FTS5
   query per common term, `"common" AND ("rare" OR ...)`, which FTS5 answers by seeking in the
   common term's list rather than reading it whole.
3. Each candidate's full score is computed exactly as FTS5 computes it (bm25.py); they are ranked
   by (score desc, rowid asc). A row holding only common terms scores at most the sum of their
   bounds: when that sum (with a margin for rounding) is below the k-th candidate's score, no such
   row can enter the top k, and the candidates' top k is the answer.

Anything else falls back to the plain query: a term FTS5 does not read as exactly one token, a
query whose terms are all rare (the plain query is cheap then), fewer than k candidates, a bound
the k-th score does not clear, two scores so close that a rounding could order them differently,
or a SQLite whose bm25 rounds differently from bm25.py.

Everything runs inside the caller's read transaction, so all statements see one snapshot.
"""

import functools
import os
import sqlite3
import threading
from dataclasses import dataclass, field

from memoryd import bm25, indexer

PLAIN = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
# Below this many rows holding any term, the plain query is cheap: no need to be clever.
PLAIN_BELOW = 4_000
# The essential terms' rows, together, at most this many (the rarest term is always essential).
RARE_BUDGET = 6_000
# Relative margin for rounding when a bound is compared with a score.
MARGIN = 1e-9
_VOCAB_ROW = "memoryd_vocab_row"
_VOCAB_INSTANCE = "memoryd_vocab_instance"
_STATS_LOCK = threading.Lock()


@dataclass
class _Stats:
    """One index generation's figures: rows, average row length, rows per term (filled lazily)."""

    key: tuple
    rows: int
    avgdl: float
    docs: dict[str, int] = field(default_factory=dict)


# Per database file: the figures of the last generation seen.
_stats: dict[str, _Stats] = {}


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[sqlite3.Connection, threading.Lock]:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.execute(indexer.SCHEMA[0])  # the same tokenizer as the index's hits table
    conn.execute("CREATE VIRTUAL TABLE probe USING fts5vocab(hits, 'instance')")
    return conn, threading.Lock()


@functools.lru_cache(maxsize=50_000)
def tokens(term: str) -> tuple[str, ...]:
    """The tokens FTS5's tokenizer makes of a query term (usually one: the term, folded)."""
    conn, lock = _probe()
    with lock:
        conn.execute("BEGIN")
        try:
            conn.execute("INSERT INTO hits (rowid, text) VALUES (1, ?)", (term,))
            found = conn.execute("SELECT term FROM probe ORDER BY offset").fetchall()
        finally:
            conn.execute("ROLLBACK")
    return tuple(token for (token,) in found)


def _ensure_vocab(conn: sqlite3.Connection) -> None:
    """The connection's fts5vocab tables over hits, in its temp schema (nothing in the file)."""
    found = conn.execute(
        "SELECT count(*) FROM temp.sqlite_master WHERE name IN (?, ?)",
        (_VOCAB_ROW, _VOCAB_INSTANCE),
    ).fetchone()[0]
    if found == 2:
        return
    (query_only,) = conn.execute("PRAGMA query_only").fetchone()
    conn.execute("PRAGMA query_only = 0")
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB_ROW}"
            " USING fts5vocab(main, hits, 'row')"
        )
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB_INSTANCE}"
            " USING fts5vocab(main, hits, 'instance')"
        )
    finally:
        conn.execute(f"PRAGMA query_only = {int(query_only)}")


def _generation(conn: sqlite3.Connection) -> _Stats:
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
    with _STATS_LOCK:
        stats = _stats.get(path) if path else None
        if stats is not None and stats.key == key:
            return stats
    rows, tokens_ = bm25.totals(blocks.get(bm25.AVERAGES_ID))
    stats = _Stats(key, rows, tokens_ / rows if rows else 0.0)
    if path:  # an in-memory database has no name to keep its figures under
        with _STATS_LOCK:
            _stats[path] = stats
    return stats


def _docs(conn: sqlite3.Connection, stats: _Stats, token: str) -> int:
    with _STATS_LOCK:
        known = stats.docs.get(token)
    if known is not None:
        return known
    row = conn.execute(f"SELECT doc FROM temp.{_VOCAB_ROW} WHERE term = ?", (token,)).fetchone()
    count = 0 if row is None else row[0]
    with _STATS_LOCK:
        stats.docs[token] = count
    return count


def plain(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    return [rowid for (rowid,) in conn.execute(PLAIN, (expression, k))]


def best_rowids(conn: sqlite3.Connection, terms: list[str], expression: str, k: int) -> list[int]:
    """The rowids of the spec's query for these terms (expression is its MATCH text), best first."""
    found = fast(conn, terms, k)
    return plain(conn, expression, k) if found is None else found


def fast(conn: sqlite3.Connection, terms: list[str], k: int) -> list[int] | None:
    """The answer without scoring every row, or None when only the plain query can give it."""
    phrases = [tokens(term) for term in terms]
    if any(len(found) != 1 for found in phrases) or not bm25.agrees_with_fts5():
        return None
    phrase_tokens = [found[0] for found in phrases]
    spelling: dict[str, str] = {}
    for term, token in zip(terms, phrase_tokens, strict=True):
        spelling.setdefault(token, term)
    _ensure_vocab(conn)
    stats = _generation(conn)
    if not stats.rows:
        return None
    docs = {token: _docs(conn, stats, token) for token in spelling}
    if sum(docs.values()) <= PLAIN_BELOW:
        return None
    by_rarity = sorted(spelling, key=lambda token: (docs[token], token))
    rare: list[str] = []
    budget = 0
    for token in by_rarity:
        if rare and budget + docs[token] > RARE_BUDGET:
            break
        rare.append(token)
        budget += docs[token]
    common = [token for token in by_rarity if token not in rare]
    if not common:
        return None
    weights = {token: bm25.idf(stats.rows, docs[token]) for token in spelling}
    common_bound = sum(
        weights[token] * bm25.PHRASE_BOUND for token in phrase_tokens if token in common
    )

    freqs: dict[str, dict[int, int]] = {}
    for token in rare:
        freqs[token] = dict(
            conn.execute(
                f"SELECT doc, count(*) FROM temp.{_VOCAB_INSTANCE} WHERE term = ? GROUP BY doc",
                (token,),
            )
        )
    candidates = set().union(*freqs.values())
    if len(candidates) < k:
        return None
    rare_expression = " OR ".join(f'"{spelling[token]}"' for token in rare)
    for token in common:
        marked = conn.execute(
            "SELECT rowid, length(highlight(hits, 0, char(1), '')) - length(text) FROM hits"
            " WHERE hits MATCH ?",
            (f'"{spelling[token]}" AND ({rare_expression})',),
        )
        # highlight marks every instance of every phrase the row holds: take the rare ones off.
        freqs[token] = {
            rowid: marks - sum(freqs[other].get(rowid, 0) for other in rare)
            for rowid, marks in marked
        }
    sizes = _sizes(conn, candidates)
    parts = [(weights[token], freqs[token]) for token in phrase_tokens]
    scores = {
        rowid: bm25.score(
            [(weight, held.get(rowid, 0)) for weight, held in parts], sizes[rowid], stats.avgdl
        )
        for rowid in candidates
    }
    ranked = sorted(candidates, key=lambda rowid: (-scores[rowid], rowid))
    kth = scores[ranked[k - 1]]
    if not common_bound * (1 + MARGIN) + MARGIN < kth:
        return None
    for higher, lower in zip(ranked[:k], ranked[1 : k + 1], strict=False):
        a, b = scores[higher], scores[lower]
        if a != b and a - b <= MARGIN * a:
            return None
    return ranked[:k]


def _sizes(conn: sqlite3.Connection, rowids: set[int]) -> dict[int, int]:
    """Each row's length in tokens, from FTS5's docsize table."""
    sizes = {}
    ordered = sorted(rowids)
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for rowid, size in conn.execute(
            f"SELECT id, sz FROM hits_docsize WHERE id IN ({marks})", chunk
        ):
            sizes[rowid] = bm25.varints(size)[0]
    return sizes
