"""The rows a top-k search scores itself: the query's terms in a table's state, which read rows
hold a skipped term, and the exact scores of those that can reach the top k.

Both searches over an FTS5 OR query use these: topk.py's exact one and budgeted.py's bounded one.
FTS5 ranks the rows holding a read term by the read phrases only (their "read part", row length
included); a read row known to hold no skipped term needs nothing more, since the skipped phrases
add exactly 0.0 to FTS5's sum; the others are scored here, their texts tokenized by FTS5's own
tokenizer (tokencount.py) and bm25.py repeating FTS5's arithmetic to the bit.

A window (a rowid) limits every statement to the rows at or above it: the budgeted search reads
only the newest rows of a word too common to read whole.
"""

import heapq
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from memoryd.search import bm25, ties, tokencount

# The rows holding a read term, with the read phrases' part of their score, best first.
PARTS = "SELECT rowid, -{score} FROM {table} WHERE {table} MATCH ?{window} ORDER BY {score} LIMIT ?"
# The rows holding a skipped term and a read one.
HOLDERS = "SELECT rowid FROM {table} WHERE {table} MATCH ?{window}"
WINDOW = " AND rowid >= ?"
SIZES = "SELECT id, sz FROM {table}_docsize WHERE id IN (SELECT value FROM json_each(?))"
# Rows scored at a time, in the order of their read part.
BATCH = 64
# Estimated costs, in the same unit: an FTS5 AND per row of the skipped term's list, and the
# exact scoring of one row (its text tokenized); measured at a million records.
AND_COST = 0.07
SCORE_COST = 15.0


class State(Protocol):
    """A table's figures in the state the caller's transaction sees: its rows, its average row
    length (all columns), and the rows holding a token (spelling: a query term that is it)."""

    rows: int
    avgdl: float

    def docs(self, conn: sqlite3.Connection, token: str, spelling: str) -> int: ...


@dataclass
class Terms:
    """A query's terms as a table's state sees them: one token per phrase (a token twice is two
    phrases, as in FTS5's sum), a query spelling of each token, the rows holding each, and each
    phrase's idf and each token's summed idf."""

    terms: list[str]
    phrase_tokens: list[str]
    spelling: dict[str, str]
    state: State
    docs: dict[str, int]
    weights: list[float]
    weight_of: dict[str, float]

    @property
    def total(self) -> int:
        return sum(self.docs.values())

    def expression(self, tokens: Sequence[str]) -> str:
        """The OR of the query's phrases whose token is among tokens, as the query has them."""
        return " OR ".join(
            f'"{term}"'
            for term, token in zip(self.terms, self.phrase_tokens, strict=True)
            if token in tokens
        )

    def bounds(self, tokens: Sequence[str]) -> dict[str, float]:
        """The most each token's phrases add to any row's score."""
        return {token: self.weight_of[token] * bm25.PHRASE_BOUND for token in tokens}


def prepare(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    state_of: Callable[[sqlite3.Connection], State],
    terms: Sequence[str],
    more_rows_than: int = 0,
) -> Terms | None:
    """The terms in the table's state (state_of is called once they are known to be one token
    each), or None when a term is not exactly one token, bm25.py does not agree with this
    SQLite's FTS5, or the table holds no more than more_rows_than rows (the rows holding each
    term are not counted then)."""
    tokens_of = table.probe().tokens
    phrases = [tokens_of(term) for term in terms]
    if any(len(found) != 1 for found in phrases) or not bm25.agrees_with_fts5():
        return None
    phrase_tokens = [found[0] for found in phrases]
    spelling: dict[str, str] = {}
    for term, token in zip(terms, phrase_tokens, strict=True):
        spelling.setdefault(token, term)
    state = state_of(conn)
    if state.rows <= more_rows_than:
        return None
    docs = {token: state.docs(conn, token, spelling[token]) for token in spelling}
    weights = [bm25.idf(state.rows, docs[token]) for token in phrase_tokens]
    weight_of = dict.fromkeys(spelling, 0.0)
    for weight, token in zip(weights, phrase_tokens, strict=True):
        weight_of[token] += weight
    return Terms(list(terms), phrase_tokens, spelling, state, docs, weights, weight_of)


def parts(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    expression: str,
    limit: int,
    window: int | None = None,
) -> list[tuple[int, float]]:
    """(rowid, read part) of the best limit rows holding a phrase of expression, best first."""
    query = PARTS.format(
        score=table.score(), table=table.name, window="" if window is None else WINDOW
    )
    args = (expression, limit) if window is None else (expression, window, limit)
    return conn.execute(query, args).fetchall()


def parts_in_order(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    expression: str,
    limit: int,
    window: int | None = None,
) -> list[tuple[int, float]]:
    """parts(), with a run of equal read parts across the cut read in ties.py's order (newest
    first), not FTS5's rowid order: the rows kept past a cut that ends the search (budgeted.py)
    are then the same in the live index and a rebuild, whose rowids differ. One row past the
    limit tells whether the run goes on; only then is every row of its part asked again."""
    found = parts(conn, table, expression, limit + 1, window)
    if len(found) <= limit or found[limit][1] != found[limit - 1][1]:
        return found[:limit]
    last = found[limit - 1][1]
    above = [pair for pair in found if pair[1] != last]
    tied = ties.first_tied(table.name, table.score(), window is not None)
    args = (expression, -last) + (() if window is None else (window,)) + (limit - len(above),)
    return above + [(rowid, last) for (rowid,) in conn.execute(tied, args)]


def probe_skipped(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    terms: Terms,
    read_parts: list[tuple[int, float]],
    k: int,
    skipped: list[str],
    bound_of: dict[str, float],
    read_expression: str,
    probed: dict[str, set[int]],
    and_cost: float | None = None,
    window: int | None = None,
) -> None:
    """For the skipped terms worth it, the read rows that hold them (one FTS5 AND each), added
    to probed (which keeps them from one round to the next: they do not depend on read_parts).

    A read row known to hold no skipped term needs no scoring: its read part is its score. A
    term's AND costs about a scan of its list; leaving it unprobed costs the scoring of every
    read row its bound lets near the k-th score. The cheaper is chosen, commonest term last
    (and_cost: AND_COST when None; 0.0 probes every term).
    """
    and_cost = AND_COST if and_cost is None else and_cost
    kth_below = read_parts[min(k, len(read_parts)) - 1][1] if read_parts else 0.0
    left = sorted(
        (token for token in skipped if token not in probed),
        key=lambda token: (terms.docs[token], token),
    )
    holders = HOLDERS.format(table=table.name, window="" if window is None else WINDOW)
    while left:
        unknown = sum(bound_of[token] for token in left)
        near = sum(1 for _rowid, part in read_parts if bm25.reaches(part + unknown, kth_below))
        token = left[0]
        if and_cost * terms.docs[token] > SCORE_COST * near:
            break
        match = f'"{terms.spelling[token]}" AND ({read_expression})'
        found = conn.execute(holders, (match,) if window is None else (match, window))
        probed[token] = {rowid for (rowid,) in found}
        left.pop(0)


def score(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    terms: Terms,
    read_parts: list[tuple[int, float]],
    cutoff: float | None,
    k: int,
    probed: dict[str, set[int]],
    bound_of: dict[str, float],
    scored: dict[int, float],
    most: int | None = None,
) -> dict[int, float]:
    """The exact scores of the read rows that can reach the top k; the others are left out.

    read_parts are the read rows FTS5 returned (rowid, read part), best first; cutoff bounds the
    part of those it did not return (None: it returned all). A probed term's holders among the
    rows not returned are scored too when their bound lets them near the k-th score. scored
    holds the rows already scored one by one (an earlier round), and gains the rows scored here.
    most: the rows scored one by one at most (None: as many as can reach the k-th score).
    """
    unknown = sum(bound for token, bound in bound_of.items() if token not in probed)
    held: dict[int, float] = {}  # rowid: the bounds of the probed terms it holds
    for token, rowids in probed.items():
        for rowid in rowids:
            held[rowid] = held.get(rowid, 0.0) + bound_of[token]
    scores: dict[int, float] = {}
    best: list[float] = []  # the k best scores so far, least first
    # (-upper bound, place in read_parts, rowid): a heap, taken a batch at a time best bound
    # first (a budgeted search stops after a few batches of thousands of rows, which a whole sort
    # would order for nothing); equal bounds in read_parts' order (parts_in_order's at the cut),
    # the rows not returned after them, so that a cap (most) keeps the same rows in any build.
    uppers: list[tuple[float, int, int]] = []
    for place, (rowid, part) in enumerate(read_parts):
        if not unknown and rowid not in held:
            # It holds no skipped term: FTS5's sum of the read phrases is its whole score, the
            # skipped phrases adding exactly 0.0 to it.
            scores[rowid] = part
            _keep(best, part, k)
        else:
            uppers.append((-(part + unknown + held.pop(rowid, 0.0)), place, rowid))
    if cutoff is not None:
        after = len(read_parts)
        uppers += [(-(cutoff + unknown + bound), after, rowid) for rowid, bound in held.items()]
    heapq.heapify(uppers)
    tokens = list(dict.fromkeys(terms.phrase_tokens))
    while uppers:
        kth = best[0] if len(best) == k else None
        taken = [heapq.heappop(uppers) for _ in range(min(BATCH, len(uppers)))]
        near = [rowid for upper, _, rowid in taken if kth is None or bm25.reaches(-upper, kth)]
        if not near or (most is not None and len(scored) >= most):
            break
        batch = []
        for rowid in near:
            if rowid in scored:
                scores[rowid] = scored[rowid]
                _keep(best, scores[rowid], k)
            else:
                batch.append(rowid)
        times_of = tokencount.counts(conn, batch, tokens, table)
        sizes = _sizes(conn, table, batch)
        for rowid in batch:
            times = times_of[rowid]
            row_parts = [
                (weight, bm25.frequency(times[token], table.weights) if token in times else 0.0)
                for weight, token in zip(terms.weights, terms.phrase_tokens, strict=True)
            ]
            scores[rowid] = scored[rowid] = bm25.score(row_parts, sizes[rowid], terms.state.avgdl)
            _keep(best, scores[rowid], k)
    return scores


def _keep(best: list[float], value: float, k: int) -> None:
    """Keep value among the k best (a heap, least first)."""
    heapq.heappush(best, value)
    if len(best) > k:
        heapq.heappop(best)


def _sizes(conn: sqlite3.Connection, table: tokencount.Table, rowids: list[int]) -> dict[int, int]:
    """Each row's length in tokens (all its columns), from FTS5's docsize table."""
    if not rowids:
        return {}
    listed = json.dumps(sorted(rowids))
    found = conn.execute(SIZES.format(table=table.name), (listed,))
    return {rowid: sum(bm25.varints(size)) for rowid, size in found}
