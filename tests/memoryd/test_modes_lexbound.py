"""hybrid's lexical yardstick: the most bm25 a context_hits row could score for a query, with
the term counts of the table's state the question reads, never of an earlier one."""

import random
import sqlite3
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import context, contextrows
from memoryd.modes.lexbound import TermCounts
from tests.memoryd.test_modes_context import user
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

WORDS = ["puppy", "concert", "garden", "jon", "gina", "paris", "training", "april", "bakery"]
COUNTING = "SELECT count(*) FROM context_hits WHERE"
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


def counted_phrases(conn: sqlite3.Connection) -> list[str]:
    """The statements that count a phrase's rows (FTS5's count)."""
    seen: list[str] = []
    conn.set_trace_callback(lambda sql: seen.append(sql) if sql.startswith(COUNTING) else None)
    return seen


def holding(conn: sqlite3.Connection, term: str) -> int:
    """The rows of context_hits holding term (its text or a neighbour's), as FTS5 counts them."""
    return conn.execute(f"{COUNTING} context_hits MATCH ?", (f'"{term}"',)).fetchone()[0]


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


def _indexed(root: Path, texts: list[str]) -> Index:
    home = Home(root)
    append(
        home, "mm-one", [user(f"2026-05-01T10:{n % 60:02d}:00Z", t) for n, t in enumerate(texts)]
    )
    index = Index(home, mode="context")
    index.open()
    index.catch_up_all()
    return index


def _bounds(conn: sqlite3.Connection, counts: TermCounts) -> tuple:
    """The bound of a question and a name's share, through counts, in one read transaction."""
    conn.execute("BEGIN")
    try:
        return counts.bound(conn, ["puppy", "jon"]), counts.share(conn, "jon")
    finally:
        conn.execute("COMMIT")


def test_the_yardstick_is_counted_in_the_state_the_question_reads(tmp_path):
    """One row more (a percent) moves n(t) and the bound as a memoryd just started counts them:
    a running memoryd ranks the same question over the same memory as a restarted one."""
    index = _indexed(tmp_path / "h", [f"puppy day {n}" for n in range(60)] + ["jon"] * 40)
    counts = TermCounts()
    conn = sqlite3.connect(index.path, isolation_level=None)
    try:
        assert _bounds(conn, counts) == _bounds(conn, TermCounts())
        assert _bounds(conn, counts)[1] == (holding(conn, "jon"), 100)
        append(index.home, "mm-one", [user("2026-05-02T10:00:00Z", "jon and the puppy")])
        index.catch_up_all()
        assert _bounds(conn, counts) == _bounds(conn, TermCounts())
        assert _bounds(conn, counts)[1] == (holding(conn, "jon"), 101)
    finally:
        conn.close()
        index.close()


def test_a_phrase_is_counted_once_for_each_state_of_the_table(tmp_path, monkeypatch):
    """A term of two tokens is counted by FTS5: kept while the table is as it was, counted
    again once a commit changed it, and never kept for a state memoryd did not make."""
    real = contextrows.probe()

    class TwoTokens:
        def tokens(self, term: str) -> tuple[str, ...]:
            return ("jon", "jon") if term == "jon" else real.tokens(term)

    monkeypatch.setattr(contextrows, "probe", TwoTokens)
    index = _indexed(tmp_path / "h", ["jon"] * 10 + ["puppy"] * 10)
    counts = TermCounts()
    conn = sqlite3.connect(index.path, isolation_level=None)
    try:
        phrases = counted_phrases(conn)
        first = _bounds(conn, counts)
        assert _bounds(conn, counts) == first
        assert len(phrases) == 1  # kept for the state
        append(index.home, "mm-one", [user("2026-05-02T10:00:00Z", "jon again")])
        index.catch_up_all()
        assert _bounds(conn, counts) == _bounds(conn, TermCounts())
        assert len(phrases) == 3  # counted again in the new state, and afresh
        assert _bounds(conn, counts)[1] == (holding(conn, "jon"), 21)
    finally:
        conn.close()
        index.close()
    conn = table(50)
    phrases = counted_phrases(conn)
    counts.bound(conn, ["jon"])
    counts.bound(conn, ["jon"])
    assert len(phrases) == 2  # a table memoryd did not write: nothing kept


def test_hybrid_running_embeds_and_answers_as_a_restarted_one(tmp_path, monkeypatch):
    """Six rows naming Caroline (2% more rows) make her a common name, which the dense half
    leaves out of the question (names.py): the index that was running when they came embeds
    and answers as a restarted one does."""
    pytest.importorskip("onnxruntime")
    from memoryd.modes import hybrid, names, vectors

    monkeypatch.setattr(vectors, "REFRESH_INTERVAL", 0.0)  # new vectors scored at once
    embedded: list[str] = []
    real = names.dense_text
    monkeypatch.setattr(
        hybrid.names, "dense_text", lambda *a: embedded.append(real(*a)) or embedded[-1]
    )
    topics = ["the garden was green", "work was busy", "we cooked pasta", "my bike broke"]
    records = []
    for n in range(300):
        text = f"{topics[n % 4]} {n}" if n % 100 != 50 else f"Caroline said {topics[n % 4]}"
        records.append(user(f"2026-03-0{1 + n // 100}T10:{n % 60:02d}:00Z", text))
    records.append(user("2026-03-05T10:00:00Z", "I went to the support group yesterday"))
    home = Home(tmp_path / "h")
    append(home, "mm-one", records)
    question = "When did Caroline go to the support group?"
    answers = []
    for restart in (False, True):
        index = Index(home, mode="hybrid")
        index.open()
        try:
            index.catch_up_all()
            assert index.drain_embeddings(120)
            if not restart:
                recall_on(index, question, k=5, session="mm-q")  # what is counted is kept
                called = [f"Caroline called about work {n}" for n in range(6)]
                append(
                    home,
                    "mm-one",
                    [user(f"2026-03-06T10:0{n}:00Z", t) for n, t in enumerate(called)],
                )
                index.catch_up_all()
                assert index.drain_embeddings(120)
            answers.append(recall_on(index, question, k=5, session="mm-q").text)
        finally:
            index.close()
    assert embedded[0] == question
    assert embedded[1] == embedded[2] == "When did go to the support group?"
    assert answers[0] == answers[1]
