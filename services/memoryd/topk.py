"""The spec's recall query, answered without scoring what cannot reach the top k (issue 14).

The spec's query, `hits MATCH '"a" OR "b" ...' ORDER BY rank LIMIT k`, scores every row that holds
any term: one common word puts hundreds of thousands of rows in play. fast() gives the same rowids
in the same order (bm25, equal scores by rowid, as FTS5 leaves them), in the manner of MaxScore:

1. Each term's row count n(t) (vocab.py, cached per index generation) gives its idf; one phrase
   adds less than idf * (k1 + 1) to any row's score, whatever the row.
2. The terms are split, rarest first, into the read ones and the skipped ones: as few read terms
   as make the skipped terms' bounds (their sum) small beside the rarest term's idf (TRY_BELOW),
   within READ_SHARE of all the query's rows (and READ_LIMIT); otherwise the plain query answers.
3. FTS5 ranks the rows holding a read term by the read terms' phrases only (their part of the
   score, row length included), best first. A row's whole score is at most that part plus the
   skipped terms' bounds.
4. The rows are scored exactly in that order, a batch at a time, until the next row's part plus
   the skipped terms' bounds is below the k-th score: no row further on can reach the top k. To
   score a row, its text is tokenized by FTS5's tokenizer (tokencount.py) for every query term's
   count, its length comes from FTS5's docsize table, and bm25.py repeats FTS5's arithmetic bit
   for bit.
5. A row that holds only skipped terms scores less than the sum of their bounds. When that sum
   (with a margin for rounding) is below the k-th score, no such row can enter the top k, and the
   scored rows' top k, by (score desc, rowid asc), is the answer.

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

from memoryd import bm25, tokencount, vocab

# The spec's query.
PLAIN = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
# The same answer, cheaper: `ORDER BY rank` makes FTS5 sort every matching row, while an ORDER BY
# on bm25() with a LIMIT keeps only the k best as rows arrive, in rowid order, ties in arrival
# order: the same rows in the same order (the tests compare the two).
FALLBACK = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY bm25(hits) LIMIT ?"
# The rows holding a read term, with the read phrases' part of their score, best first.
PARTS = "SELECT rowid, -bm25(hits) FROM hits WHERE hits MATCH ? ORDER BY bm25(hits)"
SIZES = "SELECT id, sz FROM hits_docsize WHERE id IN (SELECT value FROM json_each(?))"
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
TRY_BELOW = 1.5
# Rows scored at a time, in the order of their read part.
BATCH = 64
# Relative margin for rounding when a bound is compared with a score.
MARGIN = 1e-9


def plain(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    """The spec's query's rowids, as the spec writes it."""
    return [rowid for (rowid,) in conn.execute(PLAIN, (expression, k))]


def fallback(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    """The spec's query's rowids, by the cheaper statement."""
    return [rowid for (rowid,) in conn.execute(FALLBACK, (expression, k))]


def best_rowids(conn: sqlite3.Connection, terms: list[str], expression: str, k: int) -> list[int]:
    """The rowids of the spec's query for these terms (expression is its MATCH text), best first."""
    found = fast(conn, terms, k)
    return fallback(conn, expression, k) if found is None else found


def split(
    docs: dict[str, int], weight_of: dict[str, float], total: int
) -> tuple[list[str], float] | None:
    """The read tokens (rarest first) and the skipped ones' bound, or None for the plain query."""
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
            # Recomputed from the skipped terms themselves: no subtraction's rounding left.
            rest = order[n + 1 :]
            return order[: n + 1], sum(weight_of[t] * bm25.PHRASE_BOUND for t in rest)
    return None


def fast(conn: sqlite3.Connection, terms: list[str], k: int) -> list[int] | None:
    """The answer without scoring every row, or None when only the plain query can give it."""
    phrases = [vocab.tokens(term) for term in terms]
    if any(len(found) != 1 for found in phrases) or not bm25.agrees_with_fts5():
        return None
    phrase_tokens = [found[0] for found in phrases]
    spelling: dict[str, str] = {}
    for term, token in zip(terms, phrase_tokens, strict=True):
        spelling.setdefault(token, term)
    vocab.ensure_vocab(conn)
    stats = vocab.generation(conn)
    if not stats.rows:
        return None
    docs = {
        token: vocab.docs(conn, stats, token, spelling[token], READ_LIMIT) for token in spelling
    }
    total = sum(docs.values())
    if total <= PLAIN_BELOW:
        return None
    weights = [bm25.idf(stats.rows, docs[token]) for token in phrase_tokens]
    weight_of = dict.fromkeys(spelling, 0.0)
    for weight, token in zip(weights, phrase_tokens, strict=True):
        weight_of[token] += weight
    chosen = split(docs, weight_of, total)
    if chosen is None:
        return None
    read, skipped_bound = chosen
    # The read phrases as the query has them (a token twice is two phrases, as in FTS5's sum).
    read_expression = " OR ".join(
        f'"{term}"' for term, token in zip(terms, phrase_tokens, strict=True) if token in read
    )
    rows = conn.execute(PARTS, (read_expression,))
    scores: dict[int, float] = {}
    best: list[float] = []  # the k best scores so far, least first
    kth = None
    done = False
    while not done:
        batch = rows.fetchmany(BATCH)
        if kth is not None:
            kept = [row for row in batch if _reaches(row[1] + skipped_bound, kth)]
            done = len(kept) < len(batch)  # parts come best first: the rest are lower still
            batch = kept
        if not batch:
            break
        rowids = [rowid for rowid, _part in batch]
        held = tokencount.counts(conn, rowids, list(spelling))
        sizes = _sizes(conn, rowids)
        for rowid in rowids:
            times = held[rowid]
            parts = [
                (weight, times.get(token, 0))
                for weight, token in zip(weights, phrase_tokens, strict=True)
            ]
            scores[rowid] = bm25.score(parts, sizes[rowid], stats.avgdl)
            heapq.heappush(best, scores[rowid])
            if len(best) > k:
                heapq.heappop(best)
            if len(best) == k:
                kth = best[0]
    rows.close()
    if kth is None or _reaches(skipped_bound, kth):
        return None
    ranked = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))
    return ranked[:k] if _clear(scores, ranked, k) else None


def _reaches(bound: float, score: float) -> bool:
    """True unless bound, allowing for rounding, is surely below score."""
    return not bound * (1 + MARGIN) + MARGIN < score


def _clear(scores: dict[int, float], ranked: list[int], k: int) -> bool:
    """False when two neighbours of the top k (and the next row) are nearly, not exactly, equal:
    one rounding apart, their order would rest on the last bit."""
    for higher, lower in zip(ranked[:k], ranked[1 : k + 1], strict=False):
        a, b = scores[higher], scores[lower]
        if a != b and a - b <= MARGIN * a:
            return False
    return True


def _sizes(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, int]:
    """Each row's length in tokens, from FTS5's docsize table."""
    if not rowids:
        return {}
    listed = json.dumps(sorted(rowids))
    return {rowid: bm25.varints(size)[0] for rowid, size in conn.execute(SIZES, (listed,))}
