"""Long runs of equal scores (search/ties.py): SQLite puts them in key()'s order, row for row.

A home of repeated requests ties hundreds of thousands of rows on one bm25; such a run is put in
order by SQLite rather than keyed row by row in Python. Both orders must be the same, for the
values memoryd writes and for any other a hand-edited index may hold.
"""

import random
import sqlite3

import pytest

from memoryd.index import indexer
from memoryd.search import ties, topk
from memoryd.search.query import match_expression

# (time, kind, session, record): what memoryd writes, and what a hand may leave.
VALUES = [
    ("2026-11-03T12:00:05Z", "session", "s1", 4),
    ("2026-11-03T12:00:05.250Z", "session", "s1", 5),
    ("2026-11-03T12:00Z", "note", None, 1),
    ("2026-11-03T12:00:00Z", "session", "s2", 0),
    ("2026-11-03T11:59:59Z", "session", "s0", 9),
    ("0001-01-01T00:00:00Z", "session", "s3", 1),
    ("2026-11-03t12:00:05Z", "session", "s1", 6),
    ("2026-11-03 12:00:05Z", "session", "s1", 7),
    ("2026-11-03T12:00", "note", None, 2),
    ("2026-11-03T12:00Z ", "note", None, 3),
    ("2026-11-03T12:00Z\x00", "note", None, 4),
    ("2026-11-03T12:00:05\x00Z", "session", "s1", 20),
    ("2026-11-03T12\x00:00:05Z", "session", "s1", 21),
    ("2026-11-03T12:00:0", "session", "s1", 8),
    ("２０２６-11-03T12:00:05Z", "session", "s1", 10),
    ("", "session", "s1", 11),
    (None, "session", "s1", 12),
    (20261103120005, "session", "s1", 13),
    (b"2026-11-03T12:00:05Z", "session", "s1", 14),
    ("2026-11-03T12:00:05Z", None, "s1", 15),
    ("2026-11-03T12:00:05Z", b"session", "s1", 16),
    ("2026-11-03T12:00:05Z", "session", "", 17),
    ("2026-11-03T12:00:05Z", "session", b"s1", 18),
    ("2026-11-03T12:00:05Z", "session", "s1", "19"),
    ("2026-11-03T12:00:05Z", "session", "s1", 2.5),
    ("2026-11-03T12:00:05Z", "session", "é", 1),
    ("2026-11-03T12:00:05Z", "session", "\U0001f600", 1),
    ("2026-11-03T12:00:05Z", "session", "\uff41", 1),
    ("2026-11-03T12:00:05Z", "ßession", "s1", 1),
]


def _table(path, texts: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(indexer.SCHEMA[0])
    conn.execute(indexer.SCHEMA[1])
    conn.executemany(
        "INSERT INTO hits (rowid, text) VALUES (?, ?)", [(n, t) for n, t in enumerate(texts, 1)]
    )
    return conn


def _source(conn: sqlite3.Connection, rowid: int, time, kind, session, record) -> None:
    conn.execute(
        "INSERT INTO sources VALUES (?, ?, ?, 0, ?, ?, 'user', 'private', 0)",
        (rowid, kind, session, record, time),
    )


def _python_order(conn: sqlite3.Connection, rowids: list[int]) -> list[int]:
    known = ties.keys(conn, rowids)
    return sorted(rowids, key=lambda rowid: known[rowid])


def _sql_order(conn: sqlite3.Connection, rowids: list[int]) -> list[int]:
    return [r for (r,) in conn.execute(ties._FIRST_OF, (str(rowids), len(rowids)))]


def test_sqlite_orders_every_kind_of_value_as_key_does(tmp_path):
    conn = _table(tmp_path / "t.db", [])
    rowids = []
    draw = random.Random(5)
    for n, values in enumerate(VALUES * 3, 1):
        rowid = draw.randrange(1, 10_000) * 100 + n  # rowids in no order of the values
        _source(conn, rowid, *values)
        rowids.append(rowid)
    rowids += [7, 999_999_999]  # rows without a sources row
    draw.shuffle(rowids)
    assert _sql_order(conn, rowids) == _python_order(conn, rowids)
    # And the order is the one the module promises: the newest record first, a note's minute as
    # its first second, anything not as memoryd writes it after every time that is.
    first = [ties.keys(conn, [r])[r][0] for r in _python_order(conn, rowids)]
    assert first == sorted(first) and first[0] == -20261103120005 and first[-1] == 1


@pytest.mark.parametrize("run", [ties.LONG - 1, ties.LONG + 1, 3 * ties.LONG])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_a_long_tie_in_the_spec_query_answers_as_keying_every_row(tmp_path, run, k):
    """The spec's query (topk.fallback, every row of the run tied on bm25) gives the first k of
    the run in key order, as if every row were keyed; two rows above the run come first."""
    texts = ["water plants balcony"] * run + ["water plants", "water plants"]
    conn = _table(tmp_path / "t.db", texts)
    draw = random.Random(run * 100 + k)
    for rowid in range(1, len(texts) + 1):
        day, second = draw.randrange(1, 28), draw.randrange(60)
        values = VALUES[rowid % len(VALUES)] if rowid % 7 == 0 else (None, None, None, None)
        if values[0] is None:
            values = (f"2026-11-{day:02d}T12:00:{second:02d}Z", "session", f"s{rowid % 5}", rowid)
        if rowid % 11:  # every eleventh row has no sources row: deleted meanwhile
            _source(conn, rowid, *values)
    expression = match_expression("water plants")
    above = [run + 1, run + 2]
    want = (_python_order(conn, above) + _python_order(conn, list(range(1, run + 1))))[:k]
    conn.execute("BEGIN")
    try:
        assert topk.fallback(conn, expression, k) == want
        scores = {rowid: 1.0 for rowid in range(1, run + 1)} | {rowid: 2.0 for rowid in above}
        assert [rowid for rowid, _ in ties.best(conn, scores, k)] == want
    finally:
        conn.execute("COMMIT")
