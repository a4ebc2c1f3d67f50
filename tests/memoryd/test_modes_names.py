"""The dense half's question: the names of a conversation's people (capitalised, not first,
in many rows) are left out; a rare capitalised word, the question's subject, stays."""

import sqlite3

import pytest

from memoryd.modes import context
from memoryd.modes.lexbound import TermCounts
from memoryd.modes.names import dense_text


@pytest.fixture
def conn():
    conn = sqlite3.connect(":memory:")
    conn.execute(context.SCHEMA[0])
    rows = []
    for n in range(60):
        greeting = f"Hey Caroline! How was your week {n}?" if n % 3 == 0 else f"I am chatting {n}"
        rows.append((greeting, "", ""))
    rows.append(("We are moving to Lisbon in the spring", "", ""))
    conn.executemany("INSERT INTO context_hits (text, near, date) VALUES (?, ?, ?)", rows)
    conn.commit()  # FTS5 writes its row count when the transaction ends
    yield conn
    conn.close()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("When did Caroline move to Lisbon?", "When did move to Lisbon?"),
        ("What did Caroline's sister say?", "What did sister say?"),
        ("Caroline went where?", "Caroline went where?"),  # the first word stays
        ("when did caroline move?", "when did caroline move?"),  # not capitalised
        ("Where is Lisbon?", "Where is Lisbon?"),  # rare: the subject
        ("Why?", "Why?"),
        ("What did I tell Caroline?", "What did I tell?"),  # "I" is common, but no name
    ],
)
def test_common_names_leave_the_dense_question(conn, question, expected):
    assert dense_text(conn, TermCounts(), question) == expected


def test_an_empty_table_removes_nothing():
    conn = sqlite3.connect(":memory:")
    conn.execute(context.SCHEMA[0])
    try:
        assert dense_text(conn, TermCounts(), "When did Caroline go?") == "When did Caroline go?"
    finally:
        conn.close()
