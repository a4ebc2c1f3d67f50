"""The spec's recall query, answered without scoring what cannot reach the top k; and the same
for any FTS5 table's OR query ranked by bm25 (context's, over three weighted columns).

The spec's query, `hits MATCH '"a" OR "b" ...' ORDER BY rank LIMIT k`, scores every row that holds
any term: one common word puts hundreds of thousands of rows in play, and FTS5's bm25 reads each
term's whole list to count its rows, once per statement, whichever rows it scores. fast() gives
the same rowids in the same order by bm25, and exact() gives them with their scores for any table
(tokencount.Table), in the manner of MaxScore (the rows it scores itself: candidates.py; the same
search within a budget of rows: budgeted.py). Equal scores are in the order of what the rows are,
the newer first (ties.py), not by rowid as FTS5 leaves them: a rebuild numbers rows in another
order than the live index, and the answer must not change with it.

1. Each term's row count n(t) (the caller's State: vocab.py's for the spec, cached per index
   generation) gives its idf; one phrase adds less than idf * (k1 + 1) to any row's score,
   whatever the row and the column weights.
2. The terms are split, rarest first, into the read ones and the skipped ones: as few read terms
   as make the skipped terms' bounds (their sum) small beside the rarest term's idf (TRY_BELOW),
   within READ_SHARE of all the query's rows (and READ_LIMIT); otherwise the plain query answers.
3. FTS5 ranks the rows holding a read term by the read phrases only: each row's read
   part of its score, row length included, best first, PARTS_FIRST rows at a time.
4. For each skipped term whose AND is cheaper than the scoring it saves, one FTS5 query
   `"skipped" AND ("read" OR ...)` gives the read rows holding it. A read row known to
   hold no skipped term needs nothing more: the skipped phrases add exactly 0.0 to FTS5's sum, so
   its read part is its score, bit for bit.
5. The other read rows are scored exactly, highest bound first (read part plus the bounds of the
   skipped terms they may hold), until the next bound is below the k-th score: their columns'
   texts tokenized by FTS5's tokenizer (tokencount.py), their lengths from FTS5's docsize table,
   and bm25.py repeating FTS5's arithmetic bit for bit.
6. A row that holds only skipped terms scores less than the sum of their bounds, and a read row
   FTS5 did not return less than the last part returned plus that sum (or plus the bounds of
   the probed terms it holds, when it is known to hold some: those rows are scored). When these
   are below the k-th score (with a margin for rounding), the scored rows hold every row that
   scores at least the k-th score, and their top k, equal scores in ties.py's order, is the
   answer; when only the second is not, FTS5 returns eight times more rows
   (or all of them), the rows already scored and the terms already probed kept.

Everything else falls back to the spec's query, run as FALLBACK (the same rows and scores, cheaper;
its ties put in order by ties.spec_top):
a term FTS5 does not read as exactly one token; fewer than PLAIN_BELOW rows in all (the plain
query is cheap then); no split within the limits; fewer than k rows holding a read term; skipped
terms whose bound the k-th score does not clear; two scores so close that one rounding could swap
them; or a SQLite whose bm25 rounds differently from bm25.py. Everything runs inside the caller's
read transaction, so all the statements see one state of the index.
"""

import heapq
import sqlite3
from collections.abc import Callable, Sequence

from memoryd.search import bm25, candidates, ties, tokencount, vocab
from memoryd.search.candidates import State

# The spec's query, as the spec writes it (equal scores by rowid).
PLAIN = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
# The same rows and scores, cheaper: `ORDER BY rank` makes FTS5 sort every matching row, while an
# ORDER BY on bm25() with a LIMIT keeps only the k best as rows arrive (the tests compare the
# two). Asked for ties.MORE rows past k, so that a tie across the k-th is seen (ties.spec_top).
FALLBACK = "SELECT rowid, bm25(hits) FROM hits WHERE hits MATCH ? ORDER BY bm25(hits) LIMIT ?"
# The read rows fetched first (best first); eight times more each time the last one fetched could
# still reach the top k, or all of them once that is within ALL_AFTER times as many.
PARTS_FIRST = 256
ALL_AFTER = 4
# Below this many rows holding any term, the plain query is cheap: no need to be clever.
PLAIN_BELOW = 1_500
# The rows read (the rarer terms' rows), at most this many.
READ_LIMIT = 60_000
# FTS5 ranks a read row at what the plain query pays for it, so the way round pays only when the
# skipped terms hold most of the query's rows: when the read rows would be more than this share
# of them, the plain query answers.
READ_SHARE = 0.5
# Terms are read until the skipped ones' bounds sum to less than this many times the rarest
# term's idf: a row holding the rarest term once, of average length, scores about its idf.
TRY_BELOW = 1.3


def plain(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    """The spec's query's rowids, as the spec writes it."""
    return [rowid for (rowid,) in conn.execute(PLAIN, (expression, k))]


def fallback(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    """The spec's query's rowids, by the cheaper statement, equal scores in ties.py's order."""
    if k < 1:
        return []
    asked = k + ties.MORE
    found = conn.execute(FALLBACK, (expression, asked)).fetchall()
    return [rowid for rowid, _bm25 in ties.spec_top(conn, expression, found, k, asked)]


def best_rowids(
    conn: sqlite3.Connection, terms: Sequence[str], expression: str, k: int
) -> list[int]:
    """The rowids of the spec's query for these terms (expression is its MATCH text), best first,
    equal scores in ties.py's order."""
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
) -> list[tuple[int, float]] | None:
    """(rowid, score) of the k best rows of table for `"t1" OR "t2" ...` over terms, best first
    (score: -bm25, FTS5's own to the bit, equal scores in ties.py's order, which reads the
    sources table: the table's rowids must be the spec's), or None when only the plain query can
    tell. state_of gives the table's figures (called once the terms are known to be
    one token each)."""
    if k < 1:
        return None
    found = candidates.prepare(conn, table, state_of, terms)
    if found is None or found.total <= PLAIN_BELOW:
        return None
    read = split(found.docs, found.weight_of, found.total)
    if read is None:
        return None
    read_expression = found.expression(read)
    skipped = [token for token in found.docs if token not in read]
    bound_of = found.bounds(skipped)
    skipped_bound = sum(bound_of.values())
    # At most this many read rows (a row holding two read terms is counted twice).
    read_rows = sum(found.docs[token] for token in read)
    limit = max(PARTS_FIRST, k)
    probed: dict[str, set[int]] = {}
    scored: dict[int, float] = {}  # rows scored one by one, kept from one round to the next
    while True:
        parts = candidates.parts(conn, table, read_expression, limit)
        if len(parts) < k:
            return None
        # The read rows not returned have a part of at most the last one's (None: none left).
        cutoff = parts[-1][1] if len(parts) == limit else None
        candidates.probe_skipped(
            conn, table, found, parts, k, skipped, bound_of, read_expression, probed
        )
        unknown = sum(bound for token, bound in bound_of.items() if token not in probed)
        scores = candidates.score(conn, table, found, parts, cutoff, k, probed, bound_of, scored)
        best = heapq.nlargest(k, scores.values())
        if len(best) < k:
            return None
        # A row holding no read term scores less than the skipped terms' bounds.
        if bm25.reaches(skipped_bound, best[-1]):
            return None
        # A read row not returned that holds no probed term scores at most cutoff + unknown.
        if cutoff is None or not bm25.reaches(cutoff + unknown, best[-1]):
            break
        # Each round ranks every read row again: when a few more rounds could be needed, one
        # that returns them all costs less.
        limit = read_rows + 1 if limit * 8 * ALL_AFTER >= read_rows else limit * 8
    ranked = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))
    if not _clear(scores, ranked, k):
        return None
    # scores holds every row scoring at least the k-th: those tied with it past k are ordered too.
    return ties.best(conn, scores, k)


def _clear(scores: dict[int, float], ranked: list[int], k: int) -> bool:
    """False when two neighbours of the top k (and the next row) are nearly, not exactly, equal:
    one rounding apart, their order would rest on the last bit."""
    for higher, lower in zip(ranked[:k], ranked[1 : k + 1], strict=False):
        a, b = scores[higher], scores[lower]
        if a != b and a - b <= bm25.MARGIN * a:
            return False
    return True
