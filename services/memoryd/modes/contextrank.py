"""context's lexical ranking without scoring every row that holds a term of the question.

context ranks `context_hits MATCH '"t1" OR "t2" ...'` by bm25 with column weights (the record's
own text, its neighbours' at a lower weight, its date). A whole-sentence question holds a word or
two that tens of thousands of rows hold (a year is in the date column of half of them), and
FTS5 scores every one of them. ranked() gives the same rows, in the same order, with the same
scores, in two stages, as MaxScore does:

1. The terms are split, rarest first, into read terms and skipped ones. FTS5 ranks, by the whole
   query, only the rows that hold a read term (FILTERED: the rows are filtered before bm25 is
   called, so every score is FTS5's own, to the bit, and the rows not read cost a merge of their
   lists, not a scoring).
2. A row holding no read term scores at most what the skipped terms could add: for each, its
   phrases times its best score alone (FTS5's, looked up once per state of the table when
   needed; until then idf x (k1 + 1), bm25.py). When that sum is surely below the k-th score
   found, no such row reaches the top k, and the answer is exact (equal scores keep FTS5's
   order, rowid order, as the filter keeps the rows' order). Otherwise more terms are read,
   down to that k-th score, while the read rows stay within WIDER_SHARE of the query's rows;
   past that, context's own query answers.

What is kept, per state of the table: n(t), the rows holding each token (fts5vocab), and each
token's best score alone. A state is the index generation of memoryd's last commit
(search/generation.py) with context_hits' own averages and structure records, which every change
rewrites; a rewrite of a row's neighbour column (its session grew) can add a term to an old row,
so nothing is carried from one state to the next as the spec's counts are, and a state memoryd did
not make is counted for each search. The query's terms are tokenized by an in-memory FTS5 table
of the same schema (porter over unicode61, not the spec's tokenizer).
"""

import functools
import math
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from memoryd.search import bm25
from memoryd.search import generation as index_generation

TABLE = "context_hits"
VOCAB_ROW = "memoryd_context_vocab"
VOCAB_DOCS = f"SELECT doc FROM temp.{VOCAB_ROW} WHERE term = ?"
FIGURES = f"SELECT id, block FROM {TABLE}_data WHERE id IN (?, ?)"
# The whole query's best rows among those holding a read term (bm25 negative, best first).
FILTERED = (
    "SELECT rowid, {score} AS score FROM context_hits WHERE context_hits MATCH ?"
    " AND +rowid IN (SELECT rowid FROM context_hits WHERE context_hits MATCH ?)"
    " ORDER BY score LIMIT ?"
)
BEST = "SELECT {score} AS score FROM context_hits WHERE context_hits MATCH ? ORDER BY score LIMIT 1"
# Below this many rows holding any term, context's own query is cheap.
PLAIN_BELOW = 3_000
# The read terms' rows (a row counted once per term), at most this share of the query's rows at
# first, and when more are read.
READ_SHARE = 0.5
WIDER_SHARE = 0.7
# The k-th score is first guessed at this many times the rarest term's idf.
TRY_BELOW = 1.3
# Relative margin for rounding when a bound is compared with a score.
MARGIN = 1e-9
# Counts kept per state of the table, at most.
MAX_TERMS = 20_000


@dataclass
class Counts:
    """One state of context_hits: its rows, average row length (all columns), rows per token."""

    key: tuple | None
    rows: int
    avgdl: float
    known: dict[str, int] = field(default_factory=dict)
    most: dict[tuple[str, str], float] = field(default_factory=dict)  # (bm25 call, token)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def docs(self, conn: sqlite3.Connection, token: str, spelling: str) -> int:
        with self.lock:
            found = self.known.get(token)
        if found is not None:
            return found
        row = conn.execute(VOCAB_DOCS, (token,)).fetchone()
        count = 0 if row is None else row[0]
        with self.lock:
            if len(self.known) >= MAX_TERMS:
                self.known.clear()
            self.known[token] = count
        return count


_LOCK = threading.Lock()
_states: dict[str, Counts] = {}  # per database file: the last state seen


class _Probe:
    """An in-memory table of context_hits' schema: its tokenizer, run on demand."""

    def __init__(self, create: str):
        self.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.conn.execute(create)
        self.conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5vocab({TABLE}, 'instance')")
        self.lock = threading.Lock()

    @functools.lru_cache(maxsize=20_000)  # noqa: B019  (one probe per schema, kept for the process)
    def tokens(self, term: str) -> tuple[str, ...]:
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                self.conn.execute(f"INSERT INTO {TABLE} (rowid, text) VALUES (1, ?)", (term,))
                found = self.conn.execute("SELECT term FROM probe ORDER BY col, offset").fetchall()
            finally:
                self.conn.execute("ROLLBACK")
        return tuple(token for (token,) in found)


@functools.cache
def _probe(create: str) -> _Probe:
    return _Probe(create)


def ranked(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    limit: int,
    create: str,
    weights: tuple[float, ...],
) -> list[tuple[int, float]] | None:
    """(rowid, bm25) of the best limit rows, best first (bm25 negative, as FTS5 gives it), as
    context's query ranks them (the table made by create, context.SCHEMA's statement, ranked
    with these column weights); None when only that query can tell cheaply."""
    phrases = [_probe(create).tokens(term) for term in terms]
    if limit < 1 or any(len(found) != 1 for found in phrases):
        return None
    spelling: dict[str, str] = {}
    phrases_of: dict[str, int] = {}
    for term, (token,) in zip(terms, phrases, strict=True):
        spelling.setdefault(token, term)
        phrases_of[token] = phrases_of.get(token, 0) + 1
    state = counts(conn)
    docs = {token: state.docs(conn, token, spelling[token]) for token in spelling}
    total = sum(docs.values())
    if not state.rows or total <= PLAIN_BELOW:
        return None
    score = "bm25(" + ", ".join(["context_hits", *map(repr, weights)]) + ")"
    idf = {token: bm25.idf(state.rows, docs[token]) for token in docs}
    bound = {
        token: phrases_of[token] * state.most.get((score, token), idf[token] * bm25.PHRASE_BOUND)
        for token in docs
    }
    held = [token for token in docs if docs[token]]
    rarest = min(held, key=lambda token: (docs[token], token))
    read = _split(docs, bound, TRY_BELOW * idf[rarest], READ_SHARE * total, 0, limit)
    expression = " OR ".join(f'"{term}"' for term in terms)
    tightened = False
    while read is not None:
        read_expression = " OR ".join(f'"{spelling[token]}"' for token in read)
        statement = FILTERED.format(score=score)
        found = conn.execute(statement, (expression, read_expression, limit)).fetchall()
        if len(read) == len(docs):
            return found  # every row holding a term was ranked: the plain answer
        kth = -found[-1][1] if len(found) == limit else math.inf
        if not tightened and kth != math.inf and _reaches(_skipped(bound, read), kth):
            tightened = True
            for token in docs:
                if token not in read and (score, token) not in state.most and docs[token]:
                    row = conn.execute(BEST.format(score=score), (f'"{spelling[token]}"',))
                    state.most[score, token] = -row.fetchone()[0]
                    bound[token] = phrases_of[token] * state.most[score, token]
        if kth != math.inf and not _reaches(_skipped(bound, read), kth):
            return found
        read = _split(docs, bound, kth, WIDER_SHARE * total, len(read) + 1, limit)
    return None


def _skipped(bound: dict[str, float], read: list[str]) -> float:
    return sum(value for token, value in bound.items() if token not in read)


def _split(
    docs: dict[str, int],
    bound: dict[str, float],
    below: float,
    most_rows: float,
    at_least: int,
    rows_at_least: int,
) -> list[str] | None:
    """The tokens to read, rarest first: as few as leave the others' bounds surely below below,
    at least at_least of them holding at least rows_at_least rows (a row counted once per
    token), within most_rows; None when there are none."""
    order = sorted(docs, key=lambda token: (docs[token], token))
    skipped = sum(bound.values())
    rows = 0
    for n, token in enumerate(order):
        rows += docs[token]
        skipped -= bound[token]
        if rows > most_rows:
            return None
        if n + 1 < at_least or rows < rows_at_least:
            continue
        if n == len(order) - 1 or not _reaches(skipped, below):
            return order[: n + 1]
    return None


def _reaches(bound: float, score: float) -> bool:
    """True unless bound, allowing for rounding, is surely below score."""
    return not bound * (1 + MARGIN) + MARGIN < score


def counts(conn: sqlite3.Connection) -> Counts:
    """The figures of context_hits as this transaction sees it (from cache when unchanged)."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    record, hits_figures = index_generation.current(conn)
    blocks = dict(conn.execute(FIGURES, (bm25.AVERAGES_ID, bm25.STRUCTURE_ID)))
    rows, tokens = bm25.totals(blocks.get(bm25.AVERAGES_ID))
    _ensure_vocab(conn)
    if record is None or record.figures != hits_figures or not path:
        return Counts(None, rows, tokens / rows if rows else 0.0)
    key = (
        record.lineage,
        record.serial,
        blocks.get(bm25.AVERAGES_ID),
        blocks.get(bm25.STRUCTURE_ID),
    )
    with _LOCK:
        before = _states.get(path)
        if before is not None and before.key == key:
            return before
        state = _states[path] = Counts(key, rows, tokens / rows if rows else 0.0)
    return state


def _ensure_vocab(conn: sqlite3.Connection) -> None:
    """The connection's fts5vocab table over context_hits, in its temp schema."""
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
            f" USING fts5vocab(main, {TABLE}, 'row')"
        )
    finally:
        conn.execute(f"PRAGMA query_only = {int(query_only)}")
