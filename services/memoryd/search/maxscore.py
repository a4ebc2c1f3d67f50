"""The best rows of an FTS5 OR query by bm25 without scoring every row that holds a term.

`t MATCH '"a" OR "b" ...' ORDER BY bm25(t, ...) LIMIT k` scores every row that holds any term: a
whole-sentence question holds a word or two that tens of thousands of rows hold (a stopword, a
year in a date column). ranked() gives the same rows, in the same order, with the same scores, in
two stages, as MaxScore does:

1. The terms are split, rarest first, into read terms and skipped ones. FTS5 ranks, by the whole
   query, only the rows that hold a read term (FILTERED: `+rowid` makes the read rows a filter
   applied before bm25 is called, so every score is FTS5's own, to the bit, and a row not read
   costs a step of the merge of the lists, not a scoring).
2. A row holding no read term scores at most what the skipped terms could add: for each, its
   phrases times its best score alone (FTS5's, looked up once per state of the index, and only
   when idf x (k1 + 1), bm25.PHRASE_BOUND, is not small enough). When that sum is surely below
   the k-th score found, no such row reaches the top k and the answer is exact: equal scores
   keep FTS5's order (rowid order), as the filter keeps the rows' order. Otherwise more terms are
   read, as many as that k-th score calls for (it can only rise), while the read rows stay
   within WIDER_SHARE of the query's rows; past that, or below PLAIN_BELOW rows in all, or for a
   term that is not one token, the caller's plain query answers (None).

The caller gives the table's figures for the state its transaction sees (State: n(t) per token
and the best scores kept for that state) and its tokenizer; spec_state() is the spec's hits
table's (search/vocab.py's counts, kept per index generation).
"""

import math
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from memoryd.search import bm25, budgeted, ties, tokencount, topk, vocab

# The whole query's best rows among those holding a read term (bm25 negative, best first).
FILTERED = (
    "SELECT rowid, {score} AS score FROM {table} WHERE {table} MATCH ?"
    " AND +rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
    " ORDER BY score LIMIT ?"
)
BEST = "SELECT {score} AS score FROM {table} WHERE {table} MATCH ? ORDER BY score LIMIT 1"
# The spec's query with its scores (the rows and scores of topk.FALLBACK).
SPEC_PLAIN = "SELECT rowid, bm25(hits) FROM hits WHERE hits MATCH ? ORDER BY bm25(hits) LIMIT ?"
# Below this many rows holding any term (a row counted once per term), the plain query is cheap.
PLAIN_BELOW = 3_000
# The read terms' rows (a row counted once per term), at most this share of the query's rows at
# first, and when more are read.
READ_SHARE = 0.5
WIDER_SHARE = 0.7
# The k-th score is first guessed at this many times the rarest term's idf.
TRY_BELOW = 1.3


class State(Protocol):
    """A table's figures in one state: its rows, the rows holding a token, and the best score of
    a token's phrase alone, per bm25 call (filled by ranked(), kept as long as the state)."""

    rows: int
    most: dict[tuple[str, str], float]

    def docs(self, conn: sqlite3.Connection, token: str, spelling: str) -> int: ...


def ranked(
    conn: sqlite3.Connection,
    table: str,
    weights: tuple[float, ...],
    terms: Sequence[str],
    limit: int,
    tokens: Callable[[str], tuple[str, ...]],
    state: State,
) -> list[tuple[int, float]] | None:
    """(rowid, bm25) of the best limit rows of table for `"t1" OR "t2" ...` over terms, best
    first (bm25 negative, as FTS5 gives it, with these column weights), or None for the plain
    query. tokens: the table's tokenizer; table and weights are the caller's, never input."""
    phrases = [tokens(term) for term in terms]
    if limit < 1 or any(len(found) != 1 for found in phrases):
        return None
    spelling: dict[str, str] = {}
    phrases_of: dict[str, int] = {}
    for term, (token,) in zip(terms, phrases, strict=True):
        spelling.setdefault(token, term)
        phrases_of[token] = phrases_of.get(token, 0) + 1
    docs = {token: state.docs(conn, token, spelling[token]) for token in spelling}
    total = sum(docs.values())
    if not state.rows or total <= PLAIN_BELOW:
        return None
    score = f"bm25({', '.join([table, *map(repr, weights)])})"
    idf = {token: bm25.idf(state.rows, docs[token]) for token in docs}
    bound = {
        token: phrases_of[token] * state.most.get((score, token), idf[token] * bm25.PHRASE_BOUND)
        for token in docs
    }
    rarest = min((token for token in docs if docs[token]), key=lambda token: (docs[token], token))
    read = _split(docs, bound, TRY_BELOW * idf[rarest], READ_SHARE * total, 0, limit)
    expression = " OR ".join(f'"{term}"' for term in terms)
    filtered = FILTERED.format(score=score, table=table)
    tightened = False
    while read is not None:
        read_expression = " OR ".join(f'"{spelling[token]}"' for token in read)
        found = conn.execute(filtered, (expression, read_expression, limit)).fetchall()
        if len(read) == len(docs):
            return found  # every row holding a term was ranked: the plain answer
        kth = -found[-1][1] if len(found) == limit else math.inf
        if not tightened and kth != math.inf and bm25.reaches(_skipped(bound, read), kth):
            tightened = True
            best = BEST.format(score=score, table=table)
            for token in docs:
                if token not in read and (score, token) not in state.most and docs[token]:
                    row = conn.execute(best, (f'"{spelling[token]}"',)).fetchone()
                    state.most[score, token] = -row[0]
                    bound[token] = phrases_of[token] * state.most[score, token]
        if kth != math.inf and not bm25.reaches(_skipped(bound, read), kth):
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
        if n == len(order) - 1 or not bm25.reaches(skipped, below):
            return order[: n + 1]
    return None


class _SpecState(topk.SpecState):
    """topk's figures of the hits table, with the best scores ranked() looks up."""

    def __init__(self, stats: vocab.Stats, most: dict[tuple[str, str], float]):
        super().__init__(stats)
        self.most = most


# The best scores kept per generation of the spec's index (vocab.Stats.key), the last few.
_spec_most: dict[tuple[str, int], dict[tuple[str, str], float]] = {}
_LOCK = threading.Lock()
_GENERATIONS = 8


def spec_state(conn: sqlite3.Connection) -> State:
    """The hits table's figures as this transaction sees it (vocab.py's, per generation)."""
    vocab.ensure_vocab(conn)
    stats = vocab.generation(conn)
    if stats.key is None:  # a state memoryd did not make: kept for this search only
        return _SpecState(stats, {})
    with _LOCK:
        if stats.key not in _spec_most:
            while len(_spec_most) >= _GENERATIONS:
                del _spec_most[next(iter(_spec_most))]
            _spec_most[stats.key] = {}
        return _SpecState(stats, _spec_most[stats.key])


def spec_ranked(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    expression: str,
    limit: int,
    budget: int | None = None,
) -> list[tuple[int, float]]:
    """The spec's query's best limit rows (rowid, bm25), best first, equal scores in ties.py's
    order (expression: its MATCH text, for its plain query when ranked() cannot tell); with a
    budget, budgeted.ranked's answer within it first, perhaps approximate."""
    if limit < 1:
        return []
    if budget is not None:
        exact = budgeted.ranked(conn, tokencount.SPEC, topk.spec_state, terms, limit, budget)
        if exact is not None:
            return [(rowid, -score) for rowid, score in exact]
    # Rows past the last asked too, to see a tie across it (ties.spec_top): equal scores are put
    # in the order of what the rows are, so that a rebuilt index ranks them as the live one.
    # ranked() is asked for one more (more would lower the k-th score it proves its rows by),
    # the plain query for ties.MORE more, which cost it next to nothing.
    state = spec_state(conn)

    def best(n: int) -> list[tuple[int, float]]:
        found = ranked(conn, "hits", (), terms, n, vocab.tokens, state)
        return conn.execute(SPEC_PLAIN, (expression, n)).fetchall() if found is None else found

    asked = limit + 1
    found = ranked(conn, "hits", (), terms, asked, vocab.tokens, state)
    if found is None:
        asked = limit + ties.MORE
        found = conn.execute(SPEC_PLAIN, (expression, asked)).fetchall()
    return ties.spec_top(conn, expression, found, limit, asked, best)
