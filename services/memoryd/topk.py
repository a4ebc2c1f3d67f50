"""The spec's recall query, answered without scoring what cannot reach the top k (issue 14).

The spec's query, `hits MATCH '"a" OR "b" ...' ORDER BY rank LIMIT k`, scores every row that holds
any term: one common word puts hundreds of thousands of rows in play. The answer here is the same
rowids in the same order (bm25, equal scores by rowid, as FTS5's sorter leaves them), found in the
manner of MaxScore:

1. Each term's row count n(t) (vocab.py) gives its idf; one phrase adds less than idf * (k1 + 1)
   to any row's score.
2. The rarest terms, together in at most RARE_BUDGET rows, are the rare ones; the rest are the
   common ones. The rare query (the spec's query over the rare terms only, in the same order) is
   ranked by FTS5 itself. For a row that holds no common term it gives exactly the row's full
   score: a phrase the row does not hold adds exactly 0.0 to FTS5's sum.
3. Which of those rows also hold a common term comes from one FTS5 query per common term,
   `"common" AND ("rare" OR ...)`, which FTS5 answers by seeking in the common term's list, not
   reading it. Such a row scores at most its rare score plus the common terms' bounds: only the
   ones whose bound reaches the k-th exact score so far are scored in full, by bm25.py, which
   reproduces FTS5's arithmetic bit for bit (term counts from highlight(), row length from
   FTS5's docsize table).
4. A row that holds only common terms scores at most the sum of their bounds. When that sum (with
   a margin for rounding) is below the k-th score, no such row can enter the top k, and the
   candidates' top k, ordered by (score desc, rowid asc), is the answer.

Anything else falls back to the plain query: a term FTS5 does not read as exactly one token, a
query whose terms are all rare (the plain query is cheap then), a bound the k-th score does not
clear, two computed scores so close that one rounding could swap them, or a SQLite whose bm25
rounds differently from bm25.py. Everything runs inside the caller's read transaction, so all
the statements see one state of the index.
"""

import json
import sqlite3

from memoryd import bm25, vocab

PLAIN = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
RANKED = "SELECT rowid, rank FROM hits WHERE hits MATCH ? ORDER BY rank"
HOLDING = "SELECT rowid FROM hits WHERE hits MATCH ?"
# The times one term occurs in each listed row: highlight() marks each occurrence with one char.
TIMES = (
    "SELECT j.value, length(highlight(hits, 0, char(1), '')) - length(hits.text)"
    " FROM json_each(?) AS j CROSS JOIN hits ON hits.rowid = j.value WHERE hits MATCH ?"
)
SIZES = "SELECT id, sz FROM hits_docsize WHERE id IN (SELECT value FROM json_each(?))"
# Below this many rows holding any term, the plain query is cheap: no need to be clever.
PLAIN_BELOW = 4_000
# The rare terms' rows, together, at most this many (the rarest term is always rare).
RARE_BUDGET = 20_000
# Relative margin for rounding when a bound is compared with a score.
MARGIN = 1e-9


def plain(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    return [rowid for (rowid,) in conn.execute(PLAIN, (expression, k))]


def best_rowids(conn: sqlite3.Connection, terms: list[str], expression: str, k: int) -> list[int]:
    """The rowids of the spec's query for these terms (expression is its MATCH text), best first."""
    found = fast(conn, terms, k)
    return plain(conn, expression, k) if found is None else found


def _or(terms: list[str]) -> str:
    return " OR ".join(f'"{term}"' for term in terms)


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
        token: vocab.docs(conn, stats, token, spelling[token], RARE_BUDGET) for token in spelling
    }
    if sum(docs.values()) <= PLAIN_BELOW:
        return None
    rare: set[str] = set()
    budget = 0
    for token in sorted(spelling, key=lambda token: (docs[token], token)):
        if rare and budget + docs[token] > RARE_BUDGET:
            break
        rare.add(token)
        budget += docs[token]
    common = [token for token in spelling if token not in rare]
    if not common:
        return None
    weights = [bm25.idf(stats.rows, docs[token]) for token in phrase_tokens]
    common_bound = sum(
        weight * bm25.PHRASE_BOUND
        for weight, token in zip(weights, phrase_tokens, strict=True)
        if token not in rare
    )
    rare_terms = [term for term, token in zip(terms, phrase_tokens, strict=True) if token in rare]
    rare_any = _or([spelling[token] for token in spelling if token in rare])
    with_common: set[int] = set()
    for token in common:
        query = f'"{spelling[token]}" AND ({rare_any})'
        with_common.update(rowid for (rowid,) in conn.execute(HOLDING, (query,)))

    # Rows without a common term: FTS5's rare score is their full score, best first.
    scores: dict[int, float] = {}
    rare_scores: list[tuple[int, float]] = []
    for rowid, rank in conn.execute(RANKED, (_or(rare_terms),)):
        if rowid in with_common:
            rare_scores.append((rowid, -rank))
        elif len(scores) < k:
            scores[rowid] = -rank
    kth = sorted(scores.values(), reverse=True)[k - 1] if len(scores) >= k else None
    computed = {
        rowid
        for rowid, rare_score in rare_scores
        if kth is None or _reaches(rare_score + common_bound, kth)
    }
    scores.update(_full_scores(conn, computed, terms, phrase_tokens, weights, stats.avgdl))
    ranked = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))
    if len(ranked) < k:
        return None
    kth = scores[ranked[k - 1]]
    if _reaches(common_bound, kth):
        return None
    for higher, lower in zip(ranked[:k], ranked[1 : k + 1], strict=False):
        a, b = scores[higher], scores[lower]
        if a != b and a - b <= MARGIN * a and (higher in computed or lower in computed):
            return None
    return ranked[:k]


def _reaches(bound: float, score: float) -> bool:
    """True unless bound, allowing for rounding, is surely below score."""
    return not bound * (1 + MARGIN) + MARGIN < score


def _full_scores(
    conn: sqlite3.Connection,
    rowids: set[int],
    terms: list[str],
    phrase_tokens: list[str],
    weights: list[float],
    avgdl: float,
) -> dict[int, float]:
    """The exact bm25 of each listed row for the whole query, computed as FTS5 computes it."""
    if not rowids:
        return {}
    listed = json.dumps(sorted(rowids))
    times: dict[str, dict[int, int]] = {}
    for term, token in zip(terms, phrase_tokens, strict=True):
        if token not in times:
            times[token] = dict(conn.execute(TIMES, (listed, f'"{term}"')))
    sizes = {rowid: bm25.varints(size)[0] for rowid, size in conn.execute(SIZES, (listed,))}
    parts = [(weight, times[token]) for weight, token in zip(weights, phrase_tokens, strict=True)]
    return {
        rowid: bm25.score(
            [(weight, held.get(rowid, 0)) for weight, held in parts], sizes[rowid], avgdl
        )
        for rowid in rowids
    }
