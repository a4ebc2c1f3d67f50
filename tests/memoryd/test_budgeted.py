"""The budgeted search (budgeted.py): approximate rows, but every score the row's own bm25 to the
bit, FTS5 never ranking a common word's whole list, and a list the rare words leave short filled
from the newest rows of the commonest.
"""

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.search import budgeted, topk
from memoryd.search.query import match_expression, query_terms
from memoryd.search.tokencount import SPEC
from tests.memoryd.test_topk import _table, query_strategy, texts_strategy


@pytest.fixture()
def small(monkeypatch):
    """Tables of a few rows ranked as a million records would be."""
    monkeypatch.setattr(budgeted, "EXACT_ROWS", 0)


def _budgeted(conn: sqlite3.Connection, query: str, k: int, budget: int):
    terms = query_terms(query)
    conn.execute("BEGIN")
    try:
        return terms, budgeted.ranked(conn, SPEC, topk.spec_state, terms, k, budget)
    finally:
        conn.execute("COMMIT")


def _tie_order(conn: sqlite3.Connection) -> dict[int, int]:
    """Each row's place among equal scores: the newer first, then kind, session, record, rowid
    (the sources rows of _table have whole-second times: their text's order is the time's)."""
    found = conn.execute(
        "SELECT rowid FROM sources ORDER BY time DESC, kind, session, record, rowid"
    )
    return {rowid: n for n, (rowid,) in enumerate(found)}


def _every_score(conn: sqlite3.Connection, query: str) -> dict[int, float]:
    found = conn.execute(
        "SELECT rowid, -bm25(hits) FROM hits WHERE hits MATCH ?", (match_expression(query),)
    )
    return dict(found.fetchall())


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=texts_strategy,
    query=query_strategy,
    k=st.integers(1, 10),
    budget=st.sampled_from([1, 20, 60, 10**6]),
    scored_most=st.sampled_from([1, 64, 512]),
    parts=st.sampled_from([1, 4, 256]),
    window_scored=st.sampled_from([1, 5, 256]),
    probed_most=st.sampled_from([0, 1, 6]),
)
def test_a_budget_gives_exact_scores_of_rows_holding_a_word(
    small, monkeypatch, texts, query, k, budget, scored_most, parts, window_scored, probed_most
):
    """With a budget the rows may not be the plain query's, but each holds a word, with its own
    bm25 to the bit, best first (equal scores the newer row first), never more than k, and some row
    whenever a row holds a word; a budget that reads every word's rows gives the plain answer."""
    monkeypatch.setattr(budgeted, "SCORED_MOST", scored_most)
    monkeypatch.setattr(budgeted, "PARTS", parts)
    monkeypatch.setattr(budgeted, "WINDOW_SCORED", window_scored)
    monkeypatch.setattr(budgeted, "PROBED_MOST", probed_most)
    conn = _table(":memory:", texts)
    try:
        terms, found = _budgeted(conn, query, k, budget)
        assert found is not None
        everything = _every_score(conn, query)
        assert len(found) <= k
        assert bool(found) == bool(everything)
        for rowid, score in found:
            assert everything[rowid] == score
        tie = _tie_order(conn)
        assert found == sorted(found, key=lambda row: (-row[1], tie[row[0]]))
        if budget >= len(texts) * len(terms):  # every word's rows are read
            best = sorted(everything.items(), key=lambda row: (-row[1], tie[row[0]]))[:k]
            # the plain answer's scores; its rows too when every row may be scored, since equal
            # scores are put in order among the rows scored, and a cap on them (SCORED_MOST) may
            # leave a tied row unscored
            assert [score for _, score in found] == [score for _, score in best]
            if min(scored_most, parts) >= len(texts):
                assert found == best
    finally:
        conn.close()


def _ranked_statements(conn: sqlite3.Connection, query: str, k: int, budget: int):
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        _terms, found = _budgeted(conn, query, k, budget)
    finally:
        conn.set_trace_callback(None)
    return found, [s for s in statements if "bm25" in s]


def test_a_budget_reads_the_rare_words_and_leaves_the_common_ones(tmp_path, monkeypatch):
    """A word in every row beside a rare one: with a budget below the common word's rows only
    the rare word's rows are ranked (FTS5 never scores the common word's list), and their
    scores count the common word too."""
    texts = ["common pad"] * 20_000
    for n in range(0, 20_000, 1000):
        texts[n] = "rare common common" if n % 2000 else "rare"
    conn = _table(tmp_path / "index.sqlite3", texts)
    # 20,000 rows are few enough for the exact search: the budget is not used.
    assert _budgeted(conn, "rare common", 5, 1000)[1] is None
    monkeypatch.setattr(budgeted, "EXACT_ROWS", 10_000)
    found, ranked = _ranked_statements(conn, "rare common", 5, 1000)
    assert ranked
    assert all('"rare"' in s and '"common"' not in s for s in ranked)
    expected = conn.execute(
        "SELECT h.rowid, -h.rank FROM hits h JOIN sources s ON s.rowid = h.rowid"
        " WHERE hits MATCH ? ORDER BY h.rank, s.time DESC, s.kind, s.session, s.record LIMIT 5",
        ('"rare" OR "common"',),
    ).fetchall()
    assert found == expected  # here the rows holding "rare" are the best ones
    conn.close()


@pytest.mark.parametrize(
    ("query", "rare_rows"),
    [
        ("common nobody", 0),  # a name no row holds beside a common word
        ("common", 0),  # a common word alone
        ("rare common", 2),  # a rare word in fewer rows than the list needs
    ],
)
def test_a_short_list_is_filled_from_the_newest_rows_of_a_common_word(
    tmp_path, monkeypatch, query, rare_rows
):
    """When the words within the budget give fewer than k rows, the budget's worth of the newest
    rows holding the rarest common word fill the list, each with its exact score, and FTS5 ranks
    that word only within them; the rare word's rows, old as they are, come first."""
    texts = ["common pad"] * 20_000
    texts[10] = texts[30] = "rare common"
    conn = _table(tmp_path / "index.sqlite3", texts)
    monkeypatch.setattr(budgeted, "EXACT_ROWS", 10_000)
    found, ranked = _ranked_statements(conn, query, 8, 100)
    everything = _every_score(conn, query)
    assert len(found) == 8
    assert all(everything[rowid] == score for rowid, score in found)
    commons = [s for s in ranked if '"common"' in s]
    assert commons
    assert all("rowid >=" in s for s in commons)  # never the whole list
    rare = [rowid for rowid, _score in found if texts[rowid - 1].startswith("rare")]
    assert sorted(rare) == [11, 31][:rare_rows]
    others = [rowid for rowid, _score in found if rowid not in rare]
    assert all(rowid > 20_000 - 100 for rowid in others)  # among the newest
    conn.close()


def test_k_below_one_is_left_to_the_caller(small):
    conn = _table(":memory:", ["alpha beta"] * 3)
    try:
        assert _budgeted(conn, "alpha", 0, 10)[1] is None
    finally:
        conn.close()
