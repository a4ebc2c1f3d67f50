"""FTS5's bm25, reproduced in Python to the last bit, and the index figures it needs.

The exact top-k search (topk.py) scores a few candidate rows itself instead of letting FTS5 score
every row that holds a common term. Its answer must be FTS5's own, bit for bit, so this follows
fts5Bm25Function (ext/fts5/fts5_aux.c) operation by operation:

    idf(t)  = log((N - n(t) + 0.5) / (n(t) + 0.5)), or 1e-6 when that is <= 0
    score   = sum over the query's phrases, in order, of
              idf * ((f * (k1 + 1.0)) / (f + k1 * (1 - b + b * D / avgdl)))

with k1 = 1.2, b = 0.75, N the table's rows, n(t) the rows holding t, f the times the row holds t
(each time adding its column's weight, column by column, as FTS5 adds them: frequency()), D the
row's tokens in all its columns and avgdl the table's tokens over N. FTS5 ranks by -score. A
phrase the row does not hold adds exactly 0.0, so it can be left out of the sum.

N and the table's tokens come from FTS5's averages record (the table's _data, id 1), D from its
_docsize (the sum over columns); both are lists of SQLite varints. `agrees_with_fts5` checks the
whole reproduction against FTS5 itself once per process (a build of SQLite that fuses
multiply-adds would round differently); when it disagrees, the caller uses the plain query only.
"""

import functools
import logging
import math
import random
import sqlite3

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
# The most one phrase can add to a score: f / (f + positive) < 1.
PHRASE_BOUND = K1 + 1.0
AVERAGES_ID = 1
STRUCTURE_ID = 10


# Relative margin for rounding when a bound is compared with a score computed another way.
MARGIN = 1e-9


def reaches(bound: float, score: float) -> bool:
    """True unless bound, allowing for rounding, is surely below score."""
    return not bound * (1 + MARGIN) + MARGIN < score


def idf(rows: int, docs: int) -> float:
    value = math.log((rows - docs + 0.5) / (docs + 0.5))
    return value if value > 0.0 else 1e-6


def term_score(weight: float, freq: float, size: float, avgdl: float) -> float:
    """One phrase's part of a row's score: weight is the phrase's idf."""
    return weight * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / avgdl)))


def frequency(times: list[int], weights: tuple[float, ...]) -> float:
    """f for a phrase the row holds times[c] times in column c: FTS5 adds the column's weight
    (1.0 past the weights given) once per time, in the row's order, column by column."""
    freq = 0.0
    for column, count in enumerate(times):
        weight = weights[column] if column < len(weights) else 1.0
        for _ in range(count):
            freq += weight
    return freq


def score(parts: list[tuple[float, float]], size: int, avgdl: float) -> float:
    """A row's bm25 (positive: FTS5's rank is its negation): parts are (idf, f) per phrase,
    in the query's order."""
    total = 0.0
    for weight, freq in parts:
        if freq:
            total += term_score(weight, float(freq), float(size), avgdl)
    return total


def varints(data: bytes) -> list[int]:
    """The SQLite varints in data (big-endian 7 bits a byte; a 9th byte holds 8)."""
    values = []
    pos = 0
    while pos < len(data):
        value = 0
        for i in range(9):
            byte = data[pos]
            pos += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


def totals(averages: bytes | None) -> tuple[int, int]:
    """(rows, tokens) of an FTS5 table from its averages record; (0, 0) when it has none."""
    if not averages:
        return 0, 0
    values = varints(averages)
    return values[0], sum(values[1:])


_SELF_CHECK_ROWS = 400
# The two shapes recall scores: one column at FTS5's weights, and three weighted columns.
_SELF_CHECK_SHAPES = (((), 1), ((1.0, 0.4, 1.0), 3))


@functools.cache
def agrees_with_fts5() -> bool:
    """True when score() gives FTS5's rank (negated) for every row of a small random corpus, in
    one column and in three weighted ones."""
    rng = random.Random(14)
    words = [f"w{n}" for n in range(12)]
    for weights, width in _SELF_CHECK_SHAPES:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        try:
            found = _disagreement(conn, rng, words, weights, width)
        finally:
            conn.close()
        if found is not None:
            log.warning(
                "bm25: this SQLite rounds bm25 differently (%r != %r); recall uses the plain"
                " FTS5 query only",
                *found,
            )
            return False
    return True


def _disagreement(
    conn: sqlite3.Connection,
    rng: random.Random,
    words: list[str],
    weights: tuple[float, ...],
    width: int,
) -> tuple[float, float] | None:
    """(ours, FTS5's) for the first row of a random corpus where they differ, or None."""
    columns = [f"c{n}" for n in range(width)]
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({', '.join(columns)})")
    texts: dict[int, list[list[str]]] = {}
    for rowid in range(1, _SELF_CHECK_ROWS + 1):
        texts[rowid] = [
            rng.choices(words, weights=range(12, 0, -1), k=rng.randint(0 if n else 1, 30))
            for n in range(width)
        ]
        conn.execute(
            f"INSERT INTO t (rowid, {', '.join(columns)}) VALUES (?{', ?' * width})",
            (rowid, *(" ".join(text) for text in texts[rowid])),
        )
    (averages,) = conn.execute("SELECT block FROM t_data WHERE id = ?", (AVERAGES_ID,)).fetchone()
    rows, tokens = totals(averages)
    avgdl = tokens / rows
    sizes = {rowid: sum(varints(sz)) for rowid, sz in conn.execute("SELECT id, sz FROM t_docsize")}
    rank = f"bm25({', '.join(['t', *map(repr, weights)])})"
    for _ in range(30):
        query = rng.sample(words, rng.randint(1, 5))
        docs = {w: sum(any(w in text for text in texts[r]) for r in texts) for w in query}
        idfs = [idf(rows, docs[w]) for w in query]
        expression = " OR ".join(f'"{w}"' for w in query)
        for rowid, theirs in conn.execute(
            f"SELECT rowid, {rank} FROM t WHERE t MATCH ? ORDER BY rowid",  # noqa: S608
            (expression,),
        ):
            parts = [
                (weight, frequency([text.count(w) for text in texts[rowid]], weights))
                for weight, w in zip(idfs, query, strict=True)
            ]
            ours = -score(parts, sizes[rowid], avgdl)
            if ours != theirs:
                return ours, theirs
    return None
