"""Rows of equal score in the order of what memory holds, not of the index file.

FTS5 leaves rows of equal bm25 in rowid order, and the index gives out rowids in the order it
read things: the live index as records and notes arrived, a rebuild (bxctl reindex, a deleted
index, a restore, a start that catches up after memoryd was down) session by session in name
order, notes.md last. Ties are not rare (a request repeated, the same tool call, a note that
repeats what was said), so by rowid the same recall over the same memory would answer with
another record after a rebuild, and in the live index always with the oldest: a fact said again,
or corrected, in the same words would lose to the stale one.

So every final ordering (the spec's top k, the spec's ranking the modes fuse, the modes' arranged
answer) puts equal scores in the order of key(): the newer row first (its record's or note's
time, to the second; a note's header, to the minute, counts as its minute's first second), then
its kind, session and record (a note's number), and last its rowid, which then only orders the
rows of one record (an assistant's text and its calls), always written together in the record's
order, so alike in every build. Only rows tied with another are looked up, in the caller's read
transaction: an answer without ties costs nothing more.
"""

import sqlite3
from collections.abc import Callable, Iterable, Sequence

# A row's place in memory (a row without a sources row, deleted meanwhile, is not returned).
_KEYS = "SELECT rowid, time, kind, session, record FROM sources WHERE rowid IN ({})"
# Rows looked up by one statement, at most (SQLite's default limit of bound values is 32,766).
_CHUNK = 500
# Rows asked of FTS5 past the k-th, so that a tie across it is seen in the same statement: the
# ties among the spec's first rows run to a few dozen rows in a home of 100,000 records, and a
# longer LIMIT costs FTS5 next to nothing, where a second statement scores every row again.
MORE = 32
# Every row of the query holding exactly this bm25 (FTS5's own score, negative).
_TIED = "SELECT rowid FROM hits WHERE hits MATCH ? AND bm25(hits) = ?"
_DIGITS = frozenset("0123456789")

Key = tuple[int, str, str, int, int]


def key(rowid: int, time: object, kind: object, session: object, record: object) -> Key:
    """The order of a row among rows of equal score (lower first): newer first, then kind,
    session, record and rowid. A value not as memoryd writes it (a hand-edited row) sorts as
    the oldest, and as the empty text or record -1."""
    return (
        -_seconds(time),
        kind if isinstance(kind, str) else "",
        session if isinstance(session, str) else "",
        record if type(record) is int else -1,
        rowid,
    )


def _seconds(time: object) -> int:
    """A UTC time as memoryd stores it (2026-11-03T12:00:05Z, or a note's 2026-11-03T12:00Z)
    as the number 20261103120005, or -1 for anything else."""
    if not isinstance(time, str):
        return -1
    digits = "".join(ch for ch in time[:19] if ch in _DIGITS)
    if len(digits) == 12:
        digits += "00"
    return int(digits) if len(digits) == 14 else -1


def keys(conn: sqlite3.Connection, rowids: Iterable[int]) -> dict[int, Key]:
    """The key of each row, read from sources in the caller's transaction."""
    wanted = sorted(set(rowids))
    known = {rowid: key(rowid, None, None, None, None) for rowid in wanted}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        sql = _KEYS.format(", ".join("?" * len(chunk)))
        known.update((row[0], key(*row)) for row in conn.execute(sql, chunk))
    return known


def in_order(
    conn: sqlite3.Connection, ranked: Sequence[tuple[int, float]]
) -> list[tuple[int, float]]:
    """ranked (rowid, score), best first, with each run of equal scores put in key order."""
    tied = _tied_rows(ranked)
    if not tied:
        return list(ranked)
    known = keys(conn, tied)
    return sorted_by(ranked, lambda rowid: known[rowid])


def sorted_by(
    ranked: Sequence[tuple[int, float]], key_of: Callable[[int], Key]
) -> list[tuple[int, float]]:
    """ranked with each run of equal scores sorted by key_of (the runs stay where they are)."""
    out: list[tuple[int, float]] = []
    start = 0
    while start < len(ranked):
        end = start + 1
        while end < len(ranked) and ranked[end][1] == ranked[start][1]:
            end += 1
        run = ranked[start:end]
        out += sorted(run, key=lambda pair: key_of(pair[0])) if len(run) > 1 else run
        start = end
    return out


def best(conn: sqlite3.Connection, scores: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The k best (rowid, score) of scores (higher is better), equal scores in key order. scores
    must hold every row that scores at least the k-th best: the rows tied with it past k are
    among the ones ordered."""
    ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
    return in_order(conn, with_boundary(ranked, k))[:k]


def with_boundary(ranked: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """ranked's first k, and the rows after them that score as the k-th does."""
    if len(ranked) <= k or k < 1:
        return ranked
    end = k
    while end < len(ranked) and ranked[end][1] == ranked[k - 1][1]:
        end += 1
    return ranked[:end]


def spec_top(
    conn: sqlite3.Connection,
    expression: str,
    found: list[tuple[int, float]],
    k: int,
    asked: int,
    more: Callable[[int], list[tuple[int, float]]] | None = None,
) -> list[tuple[int, float]]:
    """The spec's k best (rowid, bm25), equal scores in key order, from found: FTS5's best rows
    of the query (expression) by bm25 alone (negative, best first), asked of them (fewer found:
    there are no more). When the last found ties with the k-th, the tie may run on: more(n)
    gives the best n (n: k + MORE, by the caller's cheaper way), and when those too end in the
    tie, every row of that score is asked of FTS5."""
    if k < 1:
        return []
    if more is not None and asked < k + MORE and _runs_on(found, k, asked):
        asked = k + MORE
        found = more(asked)
    if _runs_on(found, k, asked):
        last = found[k - 1][1]
        above = [pair for pair in found if pair[1] != last]
        tied = [(rowid, last) for (rowid,) in conn.execute(_TIED, (expression, last))]
        found = above + tied
    return in_order(conn, with_boundary(found, k))[:k]


def _runs_on(found: list[tuple[int, float]], k: int, asked: int) -> bool:
    """Whether rows past found may tie with its k-th: as many were found as asked, the last
    scoring as the k-th."""
    return len(found) >= asked > k and found[-1][1] == found[k - 1][1]


def _tied_rows(ranked: Sequence[tuple[int, float]]) -> list[int]:
    """The rows of ranked whose score another row of it has."""
    return [
        rowid
        for n, (rowid, score) in enumerate(ranked)
        if (n and ranked[n - 1][1] == score) or (n + 1 < len(ranked) and ranked[n + 1][1] == score)
    ]
