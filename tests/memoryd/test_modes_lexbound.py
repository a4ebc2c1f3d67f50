"""hybrid's lexical yardstick: the most bm25 a context_hits row could score for a query, with
term counts kept until the table has changed enough to count again."""

import random
import sqlite3

import pytest

from memoryd.modes import context, contextrank
from memoryd.modes.lexbound import DRIFT, TermCounts

WORDS = ["puppy", "concert", "garden", "jon", "gina", "paris", "training", "april", "bakery"]
RANKED = (
    "SELECT -bm25(context_hits, 1.0, 0.4, 1.0) FROM context_hits WHERE context_hits MATCH ?"
    " ORDER BY bm25(context_hits, 1.0, 0.4, 1.0) LIMIT 1"
)


def table(rows: int, seed: int = 1) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(context.SCHEMA[0])
    rng = random.Random(seed)
    for rowid in range(1, rows + 1):
        text = " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))
        near = " ".join(rng.choices(WORDS, k=rng.randint(0, 20)))
        conn.execute(
            "INSERT INTO context_hits (rowid, text, near, date) VALUES (?, ?, ?, ?)",
            (rowid, text, near, "8 May 2023 May 2023"),
        )
    return conn


def counted(conn: sqlite3.Connection) -> list[str]:
    """The statements that count a term's rows: context's own count of a token (contextrank.py)
    or FTS5's count of a phrase."""
    seen: list[str] = []
    counting = (contextrank.VOCAB_DOCS[:30], "SELECT count(*) FROM context_hits WHERE")

    conn.set_trace_callback(lambda sql: seen.append(sql) if sql.startswith(counting) else None)
    return seen


@pytest.mark.parametrize("seed", range(8))
def test_no_row_scores_above_the_bound(seed):
    conn = table(300, seed)
    rng = random.Random(seed)
    counts = TermCounts()
    for _ in range(30):
        terms = rng.sample(WORDS + ["may", "2023", "absent"], rng.randint(1, 4))
        best = conn.execute(RANKED, (" OR ".join(f'"{t}"' for t in terms),)).fetchone()
        bound = counts.bound(conn, terms)
        assert bound > 0
        if best is not None:
            assert best[0] <= bound


def test_a_rare_term_weighs_more_than_a_common_one():
    conn = table(200)
    conn.execute(
        "INSERT INTO context_hits (rowid, text, near, date) VALUES (999, 'zeppelin', '', '')"
    )
    counts = TermCounts()
    # "may" is in every row (its idf is the floor), "zeppelin" in one.
    assert counts.bound(conn, ["zeppelin"]) > 100 * counts.bound(conn, ["may"])


def test_an_empty_table_or_no_terms_bound_nothing():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(context.SCHEMA[0])
    assert TermCounts().bound(conn, ["puppy"]) == 0.0
    assert TermCounts().bound(table(10), []) == 0.0


def test_counts_are_kept_until_the_table_drifts_then_counted_again():
    conn = table(100)
    counts = TermCounts()
    seen = counted(conn)
    first = counts.bound(conn, ["puppy", "jon"])
    assert len(seen) == 2
    assert counts.bound(conn, ["puppy", "jon"]) == first
    assert len(seen) == 2  # kept
    grow = int(100 * DRIFT) + 1
    for rowid in range(1000, 1000 + grow):
        conn.execute(
            "INSERT INTO context_hits (rowid, text, near, date) VALUES (?, 'puppy', '', '')",
            (rowid,),
        )
    counts.bound(conn, ["puppy"])
    assert len(seen) == 3  # the table moved by more than DRIFT: counted again
    counts.clear()
    counts.bound(conn, ["jon"])
    assert len(seen) == 4
