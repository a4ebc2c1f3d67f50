"""Hybrid's budgeted lists (budgeted.py, over budgeted.EXACT_ROWS rows): a run of equal scores
longer than the rows FTS5 is asked for (budgeted.PARTS) is cut in ties.py's order, so the live
index and a rebuild of the same memory keep the same records, those the exact path keeps.

FTS5 leaves equal scores by rowid, which the live index gives out as records arrived and a
rebuild session by session: cut there, the two kept different records saying the same words.
EXACT_ROWS is set to 0 so that a small home takes the path a million records would.
"""

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from memoryd.modes import context, hybrid
from memoryd.search import budgeted, maxscore, ties
from memoryd.search.query import Query
from tests.memoryd.test_context_ties import SESSIONS, TEMPLATES, _home, _named

# One request said again and again: every row holding a word of it ties with every other.
REPEATED = TEMPLATES[:1]


def _lists(home: Home, question: str, budget: int | None) -> dict[str, list[tuple]]:
    """Hybrid's lexical list and the spec's part as (session, record, bm25), within budget (None:
    the exact path's)."""
    query = Query.parse(question)
    terms = context.query_terms(query)
    conn = sqlite3.connect(home.index_db, isolation_level=None)
    conn.execute("BEGIN")
    try:
        lexical = context.ranked(conn, terms, hybrid.LEXICAL_DEPTH, budget)
        spec = maxscore.spec_ranked(conn, query.terms, query.expression, context.SPEC_DEPTH, budget)
        return {"lexical": _named(conn, lexical), "spec": _named(conn, spec)}
    finally:
        conn.execute("COMMIT")
        conn.close()


def _budgeted_answers(monkeypatch) -> list[bool]:
    """Whether each call of budgeted.ranked answered (None: it left it to the exact path)."""
    answered: list[bool] = []
    ranked = budgeted.ranked

    def watching(conn, table, state_of, terms, k, budget):
        found = ranked(conn, table, state_of, terms, k, budget)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(budgeted, "ranked", watching)
    return answered


@pytest.mark.parametrize(
    ("question", "budget"),
    [
        ("balcony", hybrid.READ_BUDGET),  # every word's rows read
        ("water balcony", 1_500),  # "water" over the budget: probed, its rows scored one by one
    ],
    ids=["read", "probed"],
)
def test_a_tie_longer_than_the_rows_read_keeps_the_same_records(
    tmp_path, monkeypatch, question, budget
):
    """1,200 rows of one request tie, more than the PARTS rows read: hybrid's budgeted lists hold
    the records the exact path holds, in its order, on the live index and after a reindex."""
    monkeypatch.setattr(budgeted, "EXACT_ROWS", 0)
    answered = _budgeted_answers(monkeypatch)
    home, index = _home(tmp_path, templates=REPEATED)
    try:
        live = _lists(home, question, budget)
        exact = _lists(home, question, None)
        index.reindex()
        rebuilt = _lists(home, question, budget)
    finally:
        index.close()
    assert answered == [True, True, True, True]
    for name, depth in (("lexical", hybrid.LEXICAL_DEPTH), ("spec", context.SPEC_DEPTH)):
        assert len(live[name]) == depth
        assert len({score for _, _, score in live[name]}) == 1  # a tie chose every row
        assert live[name] == exact[name]
        assert rebuilt[name] == live[name]
    assert home.index_db.exists()


def _dated_home(tmp_path) -> tuple[Home, Index]:
    """Sessions of one request said once a minute, indexed live: the newest rows by rowid are
    the newest by time too, and a cut by rowid keeps the oldest of them."""
    home = Home(tmp_path / "home")
    start = datetime(2026, 9, 1, 12, tzinfo=UTC)
    for n, session in enumerate(SESSIONS):
        lines = []
        for minute in range(120):
            when = (start + timedelta(minutes=minute, seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
            record = {"type": "user", "time": when, "content": REPEATED[0]}
            lines.append(json.dumps(record) + "\n")
        ensure_dir(home.session_log(session).parent)
        home.session_log(session).write_text("".join(lines))
    ensure_dir(home.memory)
    index = Index(home, mode="context")
    index.open()
    index.catch_up_all()
    return home, index


def _window_answer(home: Home, budget: int) -> tuple[list[int], list[int]]:
    """The spec's budgeted list for "balcony" (every row of it over the budget: the newest
    budget rows by rowid are read), and the reference: those rows in ties.py's order."""
    query = Query.parse("balcony")
    conn = sqlite3.connect(home.index_db, isolation_level=None)
    conn.execute("BEGIN")
    try:
        found = maxscore.spec_ranked(conn, query.terms, query.expression, 10, budget)
        newest = conn.execute(
            "SELECT rowid, bm25(hits) FROM hits WHERE hits MATCH ? ORDER BY rowid DESC LIMIT ?",
            (query.expression, budget),
        ).fetchall()
        reference = ties.in_order(conn, sorted(newest, key=lambda pair: pair[1]))[:10]
        return [rowid for rowid, _ in found], [rowid for rowid, _ in reference]
    finally:
        conn.execute("COMMIT")
        conn.close()


def test_a_tie_among_a_common_words_newest_rows_is_cut_in_the_same_order(tmp_path, monkeypatch):
    """A word over the budget is read among its newest rows (budgeted.py's 3.); a tie longer
    than the PARTS rows read there keeps the rows that come first in ties.py's order among them,
    not the lowest rowids, on the live index and after a reindex."""
    monkeypatch.setattr(budgeted, "EXACT_ROWS", 0)
    home, index = _dated_home(tmp_path)
    try:
        live, live_reference = _window_answer(home, 400)
        index.reindex()
        rebuilt, rebuilt_reference = _window_answer(home, 400)
    finally:
        index.close()
    assert live == live_reference
    assert rebuilt == rebuilt_reference
    assert len(live) == 10
