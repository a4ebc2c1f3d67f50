"""The spec's recall query, answered without scoring what cannot reach the top k; and the same
for any FTS5 table's OR query ranked by bm25 (context's, over three weighted columns).

The spec's query, `hits MATCH '"a" OR "b" ...' ORDER BY rank LIMIT k`, scores every row that holds
any term: one common word puts hundreds of thousands of rows in play, and FTS5's bm25 reads each
term's whole list to count its rows, once per statement, whichever rows it scores. fast() gives
the same rowids in the same order (bm25, equal scores by rowid, as FTS5 leaves them), and exact()
gives them with their scores for any table (tokencount.Table), in the manner of MaxScore:

1. Each term's row count n(t) (the caller's State: vocab.py's for the spec, cached per index
   generation) gives its idf; one phrase adds less than idf * (k1 + 1) to any row's score,
   whatever the row and the column weights.
2. The terms are split, rarest first, into the read ones and the skipped ones: as few read terms
   as make the skipped terms' bounds (their sum) small beside the rarest term's idf (TRY_BELOW),
   within READ_SHARE of all the query's rows (and READ_LIMIT); otherwise the plain query answers.
3. FTS5 ranks the rows holding a read term by the read phrases only (PARTS): each row's read
   part of its score, row length included, best first, PARTS_FIRST rows at a time.
4. For each skipped term whose AND is cheaper than the scoring it saves, one FTS5 query
   `"skipped" AND ("read" OR ...)` (HOLDERS) gives the read rows holding it. A read row known to
   hold no skipped term needs nothing more: the skipped phrases add exactly 0.0 to FTS5's sum, so
   its read part is its score, bit for bit.
5. The other read rows are scored exactly, highest bound first (read part plus the bounds of the
   skipped terms they may hold), until the next bound is below the k-th score: their columns'
   texts tokenized by FTS5's tokenizer (tokencount.py), their lengths from FTS5's docsize table,
   and bm25.py repeating FTS5's arithmetic bit for bit.
6. A row that holds only skipped terms scores less than the sum of their bounds, and a read row
   PARTS did not return less than the last part returned plus that sum (or plus the bounds of
   the probed terms it holds, when it is known to hold some: those rows are scored). When these
   are below the k-th score (with a margin for rounding), the scored rows' top k, by (score desc,
   rowid asc), is the answer; when only the second is not, PARTS returns eight times more rows
   (or all of them), the rows already scored and the terms already probed kept.

Everything else falls back to the spec's query, run as FALLBACK (same rows, same order, cheaper):
a term FTS5 does not read as exactly one token; fewer than PLAIN_BELOW rows in all (the plain
query is cheap then); no split within the limits; fewer than k rows holding a read term; skipped
terms whose bound the k-th score does not clear; two scores so close that one rounding could swap
them; or a SQLite whose bm25 rounds differently from bm25.py. Everything runs inside the caller's
read transaction, so all the statements see one state of the index.
"""

import heapq
import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Protocol

from memoryd.search import bm25, tokencount, vocab

# The spec's query.
PLAIN = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
# The same answer, cheaper: `ORDER BY rank` makes FTS5 sort every matching row, while an ORDER BY
# on bm25() with a LIMIT keeps only the k best as rows arrive, in rowid order, ties in arrival
# order: the same rows in the same order (the tests compare the two).
FALLBACK = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY bm25(hits) LIMIT ?"
# The rows holding a read term, with the read phrases' part of their score, best first.
PARTS = "SELECT rowid, -{score} FROM {table} WHERE {table} MATCH ? ORDER BY {score} LIMIT ?"
# The read rows fetched first (best first); eight times more each time the last one fetched could
# still reach the top k, or all of them once that is within ALL_AFTER times as many.
PARTS_FIRST = 256
ALL_AFTER = 4
# The rows holding a skipped term and a read one.
HOLDERS = "SELECT rowid FROM {table} WHERE {table} MATCH ?"
SIZES = "SELECT id, sz FROM {table}_docsize WHERE id IN (SELECT value FROM json_each(?))"
# Below this many rows holding any term, the plain query is cheap: no need to be clever.
PLAIN_BELOW = 1_500
# With a budget, the rows scored one by one (their texts tokenized), at most.
SCORED_MOST = 512
# With a budget, in a table of at most this many rows, None all the same: the caller's exact
# search (maxscore) is cheap enough there (hybrid's p99 55 ms at 100,000 records, 404 ms at a
# million), and its answer is the plain query's.
EXACT_ROWS = 250_000
# The rows read (the rarer terms' rows), at most this many.
READ_LIMIT = 60_000
# FTS5 ranks a read row at what the plain query pays for it, so the way round pays only when the
# skipped terms hold most of the query's rows: when the read rows would be more than this share
# of them, the plain query answers.
READ_SHARE = 0.5
# Terms are read until the skipped ones' bounds sum to less than this many times the rarest
# term's idf: a row holding the rarest term once, of average length, scores about its idf.
TRY_BELOW = 1.3
# Rows scored at a time, in the order of their read part.
BATCH = 64
# Estimated costs, in the same unit: an FTS5 AND per row of the skipped term's list, and the
# exact scoring of one row (its text tokenized); measured at a million records.
AND_COST = 0.07
SCORE_COST = 15.0


def plain(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    """The spec's query's rowids, as the spec writes it."""
    return [rowid for (rowid,) in conn.execute(PLAIN, (expression, k))]


def fallback(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    """The spec's query's rowids, by the cheaper statement."""
    return [rowid for (rowid,) in conn.execute(FALLBACK, (expression, k))]


def best_rowids(
    conn: sqlite3.Connection, terms: Sequence[str], expression: str, k: int
) -> list[int]:
    """The rowids of the spec's query for these terms (expression is its MATCH text), best first."""
    found = fast(conn, terms, k)
    return fallback(conn, expression, k) if found is None else found


def split(docs: dict[str, int], weight_of: dict[str, float], total: int) -> list[str] | None:
    """The read tokens (rarest first), or None for the plain query."""
    limit = min(READ_LIMIT, READ_SHARE * total)
    order = sorted(docs, key=lambda token: (docs[token], token))
    skipped_bound = sum(weight_of[token] * bm25.PHRASE_BOUND for token in order)
    rows = 0
    for n, token in enumerate(order):
        rows += docs[token]
        if rows > limit:
            return None
        skipped_bound -= weight_of[token] * bm25.PHRASE_BOUND
        if n == len(order) - 1 or skipped_bound < TRY_BELOW * weight_of[order[0]]:
            return order[: n + 1]
    return None


class State(Protocol):
    """A table's figures in the state the caller's transaction sees: its rows, its average row
    length (all columns), and the rows holding a token (spelling: a query term that is it)."""

    rows: int
    avgdl: float

    def docs(self, conn: sqlite3.Connection, token: str, spelling: str) -> int: ...


class SpecState:
    """The hits table's figures in one index generation (vocab.py's)."""

    def __init__(self, stats: vocab.Stats):
        self.stats, self.rows, self.avgdl = stats, stats.rows, stats.avgdl

    def docs(self, conn: sqlite3.Connection, token: str, spelling: str) -> int:
        return vocab.docs(conn, self.stats, token, spelling)


def spec_state(conn: sqlite3.Connection) -> State:
    """The hits table's figures as this transaction sees it (vocab.py's, per generation)."""
    vocab.ensure_vocab(conn)
    return SpecState(vocab.generation(conn))


def fast(conn: sqlite3.Connection, terms: Sequence[str], k: int) -> list[int] | None:
    """The answer without scoring every row, or None when only the plain query can give it."""
    found = exact(conn, tokencount.SPEC, spec_state, terms, k)
    return None if found is None else [rowid for rowid, _score in found]


def exact(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    state_of: Callable[[sqlite3.Connection], State],
    terms: Sequence[str],
    k: int,
    budget: int | None = None,
) -> list[tuple[int, float]] | None:
    """(rowid, score) of the k best rows of table for `"t1" OR "t2" ...` over terms, best first
    (score: -bm25, FTS5's own to the bit, equal scores by rowid), or None when only the plain
    query can tell. state_of gives the table's figures (called once the terms are known to be
    one token each).

    With a budget (rows), None in a table of at most EXACT_ROWS rows; otherwise the answer may
    be approximate, at a bounded cost. The terms read are every term when all their rows fit in
    the budget, split()'s when they hold from k to budget rows, and the rarest that fit
    (within()) otherwise; FTS5 ranks their rows once by the read phrases; every skipped term is
    probed (its AND with the read terms seeks through at most budget rows), and the read rows
    that hold one are scored exactly, best bound first, SCORED_MOST at most. Where the exact
    answer would need more (rows holding no read term that could reach the top k, more rows
    ranked or scored, two scores one rounding apart), this answer is returned as it stands:
    every score in it is the row's exact bm25, but a row that belongs in the top k may be left
    out."""
    if k < 1:
        return None
    tokens_of = table.probe().tokens
    phrases = [tokens_of(term) for term in terms]
    if any(len(found) != 1 for found in phrases) or not bm25.agrees_with_fts5():
        return None
    phrase_tokens = [found[0] for found in phrases]
    spelling: dict[str, str] = {}
    for term, token in zip(terms, phrase_tokens, strict=True):
        spelling.setdefault(token, term)
    state = state_of(conn)
    if not state.rows or (budget is not None and state.rows <= EXACT_ROWS):
        return None
    docs = {token: state.docs(conn, token, spelling[token]) for token in spelling}
    total = sum(docs.values())
    if total <= PLAIN_BELOW:
        return None
    weights = [bm25.idf(state.rows, docs[token]) for token in phrase_tokens]
    weight_of = dict.fromkeys(spelling, 0.0)
    for weight, token in zip(weights, phrase_tokens, strict=True):
        weight_of[token] += weight
    read = split(docs, weight_of, total)
    if budget is not None and total <= budget:
        read = list(docs)  # every row holding a term is ranked: the exact answer
    elif budget is not None and (read is None or not k <= sum(docs[t] for t in read) <= budget):
        read = within(docs, budget)
    if read is None:
        return None
    # The read phrases as the query has them (a token twice is two phrases, as in FTS5's sum).
    read_expression = " OR ".join(
        f'"{term}"' for term, token in zip(terms, phrase_tokens, strict=True) if token in read
    )
    skipped = [token for token in docs if token not in read]
    bound_of = {token: weight_of[token] * bm25.PHRASE_BOUND for token in skipped}
    skipped_bound = sum(bound_of.values())
    # At most this many read rows (a row holding two read terms is counted twice).
    read_rows = sum(docs[token] for token in read)
    limit = max(PARTS_FIRST, k)
    parts_query = PARTS.format(score=table.score(), table=table.name)
    probed: dict[str, set[int]] = {}
    scored: dict[int, float] = {}  # rows scored one by one, kept from one round to the next
    while True:
        parts = conn.execute(parts_query, (read_expression, limit)).fetchall()
        if len(parts) < k:
            return None
        # The read rows not returned have a part of at most the last one's (None: none left).
        cutoff = parts[-1][1] if len(parts) == limit else None
        _probe_skipped(
            conn,
            table,
            parts,
            k,
            skipped,
            docs,
            bound_of,
            spelling,
            read_expression,
            probed,
            AND_COST if budget is None else 0.0,
        )
        unknown = sum(bound for token, bound in bound_of.items() if token not in probed)
        scores = _score(
            conn,
            table,
            parts,
            cutoff,
            k,
            probed,
            bound_of,
            weights,
            phrase_tokens,
            state.avgdl,
            scored,
            None if budget is None else SCORED_MOST,
        )
        best = heapq.nlargest(k, scores.values())
        if len(best) < k:
            return None
        # A row holding no read term scores less than the skipped terms' bounds.
        if bm25.reaches(skipped_bound, best[-1]) and budget is None:
            return None
        # A read row not returned that holds no probed term scores at most cutoff + unknown.
        if cutoff is None or not bm25.reaches(cutoff + unknown, best[-1]) or budget is not None:
            break
        # Each round ranks every read row again: when a few more rounds could be needed, one
        # that returns them all costs less.
        limit = read_rows + 1 if limit * 8 * ALL_AFTER >= read_rows else limit * 8
    ranked = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))
    if budget is None and not _clear(scores, ranked, k):
        return None
    return [(rowid, scores[rowid]) for rowid in ranked[:k]]


def within(docs: dict[str, int], budget: int) -> list[str] | None:
    """The rarest tokens whose rows (a row counted once per token) are within budget, at least
    one that some row holds (and every token no row holds); None when no row holds any."""
    order = sorted(docs, key=lambda token: (docs[token], token))
    read: list[str] = []
    rows = 0
    for token in order:
        rows += docs[token]
        if docs[token] and rows > budget and any(docs[t] for t in read):
            break
        read.append(token)
    return read if any(docs[token] for token in read) else None


def _score(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    parts: list[tuple[int, float]],
    cutoff: float | None,
    k: int,
    probed: dict[str, set[int]],
    bound_of: dict[str, float],
    weights: list[float],
    phrase_tokens: list[str],
    avgdl: float,
    scored: dict[int, float],
    most: int | None = None,
) -> dict[int, float]:
    """The exact scores of the read rows that can reach the top k; the others are left out.

    parts are the read rows FTS5 returned (rowid, read part), best first; cutoff bounds the part
    of those it did not return (None: it returned all). A probed term's holders among the rows
    not returned are scored too when their bound lets them near the k-th score. scored holds the
    rows already scored one by one (an earlier round), and gains the rows scored here. most:
    the rows scored one by one at most (None: as many as can reach the k-th score).
    """
    unknown = sum(bound for token, bound in bound_of.items() if token not in probed)
    held: dict[int, float] = {}  # rowid: the bounds of the probed terms it holds
    for token, rowids in probed.items():
        for rowid in rowids:
            held[rowid] = held.get(rowid, 0.0) + bound_of[token]
    scores: dict[int, float] = {}
    best: list[float] = []  # the k best scores so far, least first
    uppers: list[tuple[float, int]] = []
    for rowid, part in parts:
        if not unknown and rowid not in held:
            # It holds no skipped term: FTS5's sum of the read phrases is its whole score, the
            # skipped phrases adding exactly 0.0 to it.
            scores[rowid] = part
            _keep(best, part, k)
        else:
            uppers.append((part + unknown + held.pop(rowid, 0.0), rowid))
    if cutoff is not None:
        uppers += [(cutoff + unknown + bound, rowid) for rowid, bound in held.items()]
    uppers.sort(key=lambda item: (-item[0], item[1]))
    tokens = list(dict.fromkeys(phrase_tokens))
    for start in range(0, len(uppers), BATCH):
        kth = best[0] if len(best) == k else None
        near = [
            rowid
            for upper, rowid in uppers[start : start + BATCH]
            if kth is None or bm25.reaches(upper, kth)
        ]
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
                for weight, token in zip(weights, phrase_tokens, strict=True)
            ]
            scores[rowid] = scored[rowid] = bm25.score(row_parts, sizes[rowid], avgdl)
            _keep(best, scores[rowid], k)
    return scores


def _keep(best: list[float], score: float, k: int) -> None:
    """Keep score among the k best (a heap, least first)."""
    heapq.heappush(best, score)
    if len(best) > k:
        heapq.heappop(best)


def _probe_skipped(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    parts: list[tuple[int, float]],
    k: int,
    skipped: list[str],
    docs: dict[str, int],
    bound_of: dict[str, float],
    spelling: dict[str, str],
    read_expression: str,
    probed: dict[str, set[int]],
    and_cost: float = AND_COST,
) -> None:
    """For the skipped terms worth it, the read rows that hold them (one FTS5 AND each), added
    to probed (which keeps them from one round to the next: they do not depend on parts).

    A read row known to hold no skipped term needs no scoring: its read part is its score. A
    term's AND costs about a scan of its list; leaving it unprobed costs the scoring of every
    read row its bound lets near the k-th score. The cheaper is chosen, commonest term last.
    """
    kth_below = parts[k - 1][1]
    left = sorted(
        (token for token in skipped if token not in probed), key=lambda token: (docs[token], token)
    )
    while left:
        unknown = sum(bound_of[token] for token in left)
        near = sum(1 for _rowid, part in parts if bm25.reaches(part + unknown, kth_below))
        token = left[0]
        if and_cost * docs[token] > SCORE_COST * near:
            break
        holders = HOLDERS.format(table=table.name)
        found = conn.execute(holders, (f'"{spelling[token]}" AND ({read_expression})',))
        probed[token] = {rowid for (rowid,) in found}
        left.pop(0)


def _clear(scores: dict[int, float], ranked: list[int], k: int) -> bool:
    """False when two neighbours of the top k (and the next row) are nearly, not exactly, equal:
    one rounding apart, their order would rest on the last bit."""
    for higher, lower in zip(ranked[:k], ranked[1 : k + 1], strict=False):
        a, b = scores[higher], scores[lower]
        if a != b and a - b <= bm25.MARGIN * a:
            return False
    return True


def _sizes(conn: sqlite3.Connection, table: tokencount.Table, rowids: list[int]) -> dict[int, int]:
    """Each row's length in tokens (all its columns), from FTS5's docsize table."""
    if not rowids:
        return {}
    listed = json.dumps(sorted(rowids))
    found = conn.execute(SIZES.format(table=table.name), (listed,))
    return {rowid: sum(bm25.varints(size)) for rowid, size in found}
