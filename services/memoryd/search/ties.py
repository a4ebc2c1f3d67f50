"""Rows of equal score in the order of what memory holds, not of the index file.

FTS5 leaves rows of equal bm25 in rowid order, and the index gives out rowids in the order it
read things: the live index as records and notes arrived, a rebuild (bxctl reindex, a deleted
index, a restore, a start that catches up after memoryd was down) session by session in name
order, notes.md last. Ties are not rare (a request repeated, the same tool call, a note that
repeats what was said), so by rowid the same recall over the same memory would answer with
another record after a rebuild, and in the live index always with the oldest: a fact said again,
or corrected, in the same words would lose to the stale one.

So every final ordering (the spec's top k, the spec's ranking the modes fuse, context's lexical
candidates, the modes' arranged answer) puts equal scores in the order of key(): the newer row
first (its record's or note's time, to the second; a note's header, to the minute, counts as its
minute's first second), then its kind, session and record (a note's number), and last its rowid,
which then only orders the rows of one record (an assistant's text and its calls), always
written together in the record's order, so alike in every build. Only rows tied with another are
looked up, in the caller's read transaction: an answer without ties costs nothing more.

A tie can be long: a home of repeated requests ("remind me to water the plants") holds hundreds
of thousands of rows of one length and one bm25 for a word of them. Keying each in Python cost
seconds at a million records, so a run longer than LONG is put in order by SQLite (ORDER, the
same order as key() to the row, LIMIT the rows wanted) and only its first rows reach Python.
"""

import json
import re
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
# Times as memoryd writes them: a record's (2026-11-03T12:00:05Z, its fraction of a second not
# counted) and a note header's (2026-11-03T12:00Z); any other value sorts as the oldest.
_RECORD_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
_NOTE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}Z")
_GLOB_DAY = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]"
# key() in SQL over sources s, LEFT JOINed so that a row without one sorts as key's defaults do:
# the time as text (fixed width, so its order is the time's; '' the oldest), then kind, session
# and record as key() takes them. Text compares alike in both: SQLite's BINARY order of UTF-8
# is Python's order of code points.
_ORDER = (
    f"CASE WHEN typeof(s.time) = 'text' AND s.time GLOB '{_GLOB_DAY}:[0-9][0-9]*'"
    " THEN substr(s.time, 1, 19)"
    f" WHEN typeof(s.time) = 'text' AND s.time GLOB '{_GLOB_DAY}Z'"
    # GLOB stops at a NUL, which fullmatch does not: the whole text must be the note's time.
    " AND length(CAST(s.time AS BLOB)) = 17"
    " THEN substr(s.time, 1, 16) || ':00' ELSE '' END DESC,"
    " CASE WHEN typeof(s.kind) = 'text' THEN s.kind ELSE '' END,"
    " CASE WHEN typeof(s.session) = 'text' THEN s.session ELSE '' END,"
    " CASE WHEN typeof(s.record) = 'integer' THEN s.record ELSE -1 END, {rowid}"
)
# The first rows, in key order, of those holding exactly this bm25 for the query (FTS5's own
# score, negative).
_FIRST_TIED = (
    "SELECT h.rowid FROM hits h LEFT JOIN sources s ON s.rowid = h.rowid"
    " WHERE hits MATCH ? AND bm25(hits) = ? ORDER BY " + _ORDER.format(rowid="h.rowid") + " LIMIT ?"
)
# The first rows, in key order, of a list of rowids given as a JSON array.
_FIRST_OF = (
    "SELECT w.value FROM json_each(?) w LEFT JOIN sources s ON s.rowid = w.value"
    " ORDER BY " + _ORDER.format(rowid="w.value") + " LIMIT ?"
)
# A run of equal scores longer than this is put in order by SQLite.
LONG = 256

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
    as the number 20261103120005, or -1 for anything else (as _ORDER reads it)."""
    if not isinstance(time, str):
        return -1
    if _RECORD_TIME.match(time):
        seconds = time[17:19]
    elif _NOTE_TIME.fullmatch(time):
        seconds = "00"
    else:
        return -1
    return int(time[0:4] + time[5:7] + time[8:10] + time[11:13] + time[14:16] + seconds)


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
    conn: sqlite3.Connection, ranked: Sequence[tuple[int, float]], k: int | None = None
) -> list[tuple[int, float]]:
    """ranked (rowid, score), best first, with each run of equal scores put in key order. With
    k (the caller keeps the first k), a last run longer than LONG is put in order by SQLite and
    cut to the rows of it within the first k."""
    if k is not None:
        ranked = _last_run_cut(conn, ranked, k)
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
    return in_order(conn, with_boundary(ranked, k), k)[:k]


def with_boundary(ranked: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """ranked's first k, and the rows after them that score as the k-th does."""
    if len(ranked) <= k or k < 1:
        return ranked
    end = k
    while end < len(ranked) and ranked[end][1] == ranked[k - 1][1]:
        end += 1
    return ranked[:end]


def first_tied(table: str, score: str, window: bool = False) -> str:
    """The statement asking, in key order, the first rows of a score for an FTS5 table whose
    rowids are the spec's, ranked by score (its bm25 call): spec_top's every row of the k-th's
    score in context_hits, candidates.parts_in_order's in either table. table and score are
    constants of the caller's, never built from input. With window, only the rows at or above a
    rowid given after the score (budgeted.py's newest rows of a word)."""
    above = " AND h.rowid >= ?" if window else ""
    return (
        f"SELECT h.rowid FROM {table} h LEFT JOIN sources s ON s.rowid = h.rowid"
        f" WHERE {table} MATCH ? AND {score} = ?{above} ORDER BY "
        + _ORDER.format(rowid="h.rowid")
        + " LIMIT ?"
    )


def spec_top(
    conn: sqlite3.Connection,
    expression: str,
    found: list[tuple[int, float]],
    k: int,
    asked: int,
    more: Callable[[int], list[tuple[int, float]]] | None = None,
    tied: str = _FIRST_TIED,
) -> list[tuple[int, float]]:
    """The spec's k best (rowid, bm25), equal scores in key order, from found: FTS5's best rows
    of the query (expression) by bm25 alone (negative, best first), asked of them (fewer found:
    there are no more). When the last found ties with the k-th, the tie may run on: more(n)
    gives the best n (n: k + MORE, by the caller's cheaper way), and when those too end in the
    tie, every row of that score is asked of FTS5 (by tied: first_tied's for another table)."""
    if k < 1:
        return []
    if more is not None and asked < k + MORE and _runs_on(found, k, asked):
        asked = k + MORE
        found = more(asked)
    if _runs_on(found, k, asked):
        last = found[k - 1][1]
        above = [pair for pair in found if pair[1] != last]
        wanted = (expression, last, k - len(above))
        found = above + [(rowid, last) for (rowid,) in conn.execute(tied, wanted)]
    return in_order(conn, with_boundary(found, k), k)[:k]


def _last_run_cut(
    conn: sqlite3.Connection, ranked: Sequence[tuple[int, float]], k: int
) -> Sequence[tuple[int, float]]:
    """ranked with its last run of equal scores, when longer than LONG, cut to its rows within
    the first k, read in key order from SQLite."""
    if len(ranked) <= LONG:
        return ranked
    score = ranked[-1][1]
    start = len(ranked) - 1
    while start > 0 and ranked[start - 1][1] == score:
        start -= 1
    if len(ranked) - start <= LONG:
        return ranked
    run = json.dumps([rowid for rowid, _score in ranked[start:]])
    wanted = max(0, k - start)
    first = [(rowid, score) for (rowid,) in conn.execute(_FIRST_OF, (run, wanted))]
    return list(ranked[:start]) + first


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
