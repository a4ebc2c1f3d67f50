"""The spec's recall query, answered without scoring what cannot reach the top k (issue 14).

The spec's query, `hits MATCH '"a" OR "b" ...' ORDER BY rank LIMIT k`, scores every row that holds
any term: one common word puts hundreds of thousands of rows in play. fast() gives the same rowids
in the same order (bm25, equal scores by rowid, as FTS5 leaves them), in the manner of MaxScore:

1. Each term's row count n(t) (vocab.py, cached per index generation) gives its idf; one phrase
   adds less than idf * (k1 + 1) to any row's score, whatever the row.
2. The rarer terms are read, the commonest skipped: rarest first, while the rows read stay within
   READ_SHARE of all the query's rows (and READ_LIMIT).
3. For every row holding a read term, estimate.py gives (inside SQLite, from fts5vocab counts) the
   read terms it holds, their counts, and a bound of their part of its score. Which of those rows
   also hold a skipped term, and how often, comes from one FTS5 query per skipped term,
   `"skipped" AND ("read" OR ...)`, which FTS5 answers by seeking in the skipped term's list, not
   reading it; highlight() counts the occurrences.
4. The rows are scored exactly (bm25.py reproduces FTS5's arithmetic bit for bit, the row's length
   from FTS5's docsize table) in batches, highest bound first, until the next bound plus the
   skipped terms' bounds is below the k-th score: no row further on can reach the top k.
5. A row that holds only skipped terms scores less than the sum of their bounds. When that sum
   (with a margin for rounding) is below the k-th score, no such row can enter the top k, and the
   scored rows' top k, by (score desc, rowid asc), is the answer.

Everything else falls back to the spec's query, run as FALLBACK (same rows, same order, cheaper):
a term FTS5 does not read as exactly one token; fewer than PLAIN_BELOW rows in all (the plain
query is cheap then); no term that can be read within the limits; skipped terms whose bound is
too high to be worth trying (TRY_BELOW) or that the k-th score does not clear; two scores so
close that one rounding could swap them; or a SQLite whose bm25 rounds differently from bm25.py.
Everything runs inside the caller's read transaction, so all the statements see one state of the
index.
"""

import heapq
import json
import sqlite3

from memoryd import bm25, estimate, vocab

# The spec's query.
PLAIN = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
# The same answer, cheaper: `ORDER BY rank` makes FTS5 sort every matching row, while an ORDER BY
# on bm25() with a LIMIT keeps only the k best as rows arrive, in rowid order, ties in arrival
# order: the same rows in the same order (the tests compare the two).
FALLBACK = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY bm25(hits) LIMIT ?"
# Each row matching an AND of two phrases, with how many occurrences of either it holds:
# highlight() adds one character per occurrence.
MARKED = (
    "SELECT rowid, length(highlight(hits, 0, char(1), '')) - length(text) FROM hits"
    " WHERE hits MATCH ?"
)
SIZES = "SELECT id, sz FROM hits_docsize WHERE id IN (SELECT value FROM json_each(?))"
# Below this many rows holding any term, the plain query is cheap: no need to be clever.
PLAIN_BELOW = 1_500
# The rows read (the rarer terms' rows), at most this many; the commoner terms are skipped.
READ_LIMIT = 60_000
# Reading a row here costs about what FTS5's ranking of it costs, so the way round pays only when
# the skipped terms hold most of the query's rows: when the rows read would be more than this
# share of them, the plain query answers.
READ_SHARE = 0.4
# Tried only when the skipped terms' bound is below this many times the rarest term's idf.
TRY_BELOW = 1.5
# Rows scored at a time, in the order of their bound.
BATCH = 256
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
    # The commonest terms are not read: the others' rows come to at most limit.
    limit = min(READ_LIMIT, READ_SHARE * total)
    read: list[str] = []
    budget = 0
    for token in sorted(spelling, key=lambda token: (docs[token], token)):
        if budget + docs[token] > limit:
            break
        read.append(token)
        budget += docs[token]
    if not read:
        return None
    skipped = [token for token in spelling if token not in read]
    skipped_bound = sum(weight_of[token] * bm25.PHRASE_BOUND for token in skipped)
    if skipped_bound >= TRY_BELOW * max(weight_of[token] for token in read):
        # The k-th score would have to beat the skipped terms' bound, and a row that holds one
        # rare term seldom scores more than that term's idf: not worth trying.
        return None
    # Rows that hold a skipped term and a read one, with the skipped term's count.
    read_any = " OR ".join(f'"{spelling[token]}"' for token in read)
    marks = {
        token: dict(conn.execute(MARKED, (f'"{spelling[token]}" AND ({read_any})',)))
        for token in skipped
    }
    parameters: list = [stats.avgdl]
    for token in read:
        parameters += [token, weight_of[token]]
    rows = conn.execute(estimate.statement(vocab.VOCAB_INSTANCE, len(read)), parameters)
    scores: dict[int, float] = {}
    best: list[float] = []  # the k best scores so far, least first
    kth = None
    while True:
        batch = rows.fetchmany(BATCH)
        if kth is not None:
            batch = [row for row in batch if _reaches(row[2] + skipped_bound, kth)]
        if not batch:
            break
        sizes = _sizes(conn, [row[0] for row in batch])
        for rowid, held_text, _bound in batch:
            times = {}
            for item in held_text.split(" "):
                token, count = item.split(":")
                times[token] = int(count)
            for token in skipped:
                if rowid in marks[token]:
                    # highlight() marked the read terms' occurrences too.
                    times[token] = marks[token][rowid] - sum(times.get(t, 0) for t in read)
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
