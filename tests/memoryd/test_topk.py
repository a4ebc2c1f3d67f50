"""Exact top-k (topk.py): the same rowids, in the same order, as the spec's plain FTS5 query.

The corpora use small vocabularies and repeated texts, so that equal scores (ties) are common, and
the thresholds are lowered so that the fast path (not the fallback) answers most queries.
"""

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.index import indexer
from memoryd.search import bm25, candidates, maxscore, tokencount, topk, vocab
from memoryd.search.query import match_expression, query_terms

WORDS = ["alpha", "Beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]
# Drawn from this, the first words are common and the last ones rare (about as Zipf would have it).
SKEWED = [word for rank, word in enumerate(WORDS, 1) for _ in range(max(1, 12 // rank))]


# The spec's query with equal scores in the order recall gives them (search/ties.py): the newer
# row first, then kind, session, record, rowid. The sources rows _table writes have whole-second
# times, so the text's order is the time's.
REFERENCE = (
    "SELECT h.rowid FROM hits h JOIN sources s ON s.rowid = h.rowid WHERE hits MATCH ?"
    " ORDER BY h.rank, s.time DESC, s.kind, s.session, s.record, h.rowid LIMIT ?"
)


def _table(path, texts: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(indexer.SCHEMA[0])
    conn.execute(indexer.SCHEMA[1])
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO hits (rowid, text) VALUES (?, ?)", [(n, t) for n, t in enumerate(texts, 1)]
    )
    _sources(conn, range(1, len(texts) + 1))
    conn.execute("COMMIT")
    return conn


def _sources(conn: sqlite3.Connection, rowids) -> None:
    """Rows of sources for rowids whose order in time, session and record is not the rowids':
    three days, five sessions, records counted down."""
    conn.executemany(
        "INSERT INTO sources VALUES (?, 'session', ?, 0, ?, ?, 'user', 'private', 0)",
        [
            (n, f"s{n * 7 % 5}", 100_000 - n // 3, f"2026-11-0{1 + n * 5 % 3}T12:00:00Z")
            for n in rowids
        ],
    )


def _reference(conn: sqlite3.Connection, expression: str, k: int) -> list[int]:
    return [rowid for (rowid,) in conn.execute(REFERENCE, (expression, k))]


def _both(conn: sqlite3.Connection, query: str, k: int) -> tuple[list[int], list[int] | None]:
    terms = query_terms(query)
    plain = _reference(conn, match_expression(query), k)
    conn.execute("BEGIN")
    try:
        fast = topk.fast(conn, terms, k)
    finally:
        conn.execute("COMMIT")
    return plain, fast


@pytest.fixture()
def eager(monkeypatch):
    """Thresholds low enough that tiny corpora take the fast path."""
    monkeypatch.setattr(topk, "PLAIN_BELOW", 0)
    monkeypatch.setattr(topk, "READ_SHARE", 1.0)
    monkeypatch.setattr(topk, "TRY_BELOW", 1e9)
    monkeypatch.setattr(topk, "READ_LIMIT", 2000)


texts_strategy = st.lists(
    st.one_of(
        st.lists(st.sampled_from(SKEWED), min_size=1, max_size=12).map(" ".join),
        st.sampled_from(["alpha", "alpha Beta", "gamma gamma", "zeta eta theta"]),  # repeats
    ),
    min_size=1,
    max_size=120,
)
query_strategy = st.lists(
    st.sampled_from(WORDS + ["ALPHA", "beta", "nothere", "Gamma"]), min_size=1, max_size=6
).map(" ".join)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=texts_strategy,
    query=query_strategy,
    k=st.integers(1, 10),
    read_limit=st.sampled_from([0, 3, 15, 40, 10**6]),
    try_below=st.sampled_from([0.0, 0.5, 1.5, 3.0, 1e9]),
    batch=st.sampled_from([1, 3, 64]),
    and_cost=st.sampled_from([0.0, 0.07, 1e9]),
    parts_first=st.sampled_from([1, 2, 256]),
    all_after=st.sampled_from([0, 4, 10**9]),
)
def test_the_fast_answer_is_the_plain_answer(
    eager,
    monkeypatch,
    texts,
    query,
    k,
    read_limit,
    try_below,
    batch,
    and_cost,
    parts_first,
    all_after,
):
    """Every split of the terms, batch size, choice of probed terms and number of rounds gives
    the plain answer when it gives one (and_cost 0 probes every skipped term, 1e9 none;
    all_after 0 fetches eight times more rows each round, 1e9 all of them in the second)."""
    monkeypatch.setattr(candidates, "AND_COST", and_cost)
    monkeypatch.setattr(topk, "PARTS_FIRST", parts_first)
    monkeypatch.setattr(topk, "ALL_AFTER", all_after)
    monkeypatch.setattr(topk, "READ_LIMIT", read_limit)
    monkeypatch.setattr(topk, "TRY_BELOW", try_below)
    monkeypatch.setattr(candidates, "BATCH", batch)
    conn = _table(":memory:", texts)
    try:
        plain, fast = _both(conn, query, k)
        assert topk.fallback(conn, match_expression(query), k) == plain
        if fast is not None:
            assert fast == plain
    finally:
        conn.close()


def test_the_fast_path_answers_most_queries_and_agrees_with_ties(eager):
    rng = random.Random(5)
    texts = [" ".join(rng.choices(SKEWED, k=rng.randint(1, 8))) for _ in range(3000)]
    conn = _table(":memory:", texts)
    answered = 0
    for _ in range(200):
        query = " ".join(rng.sample(WORDS, rng.randint(2, 5)))
        k = rng.randint(1, 10)
        plain, fast = _both(conn, query, k)
        if fast is not None:
            answered += 1
            assert fast == plain
    conn.close()
    assert answered >= 60  # the rest fell back: all the terms as common as each other


def test_a_common_term_is_not_scored_row_by_row(tmp_path):
    """At default thresholds, a query with one common and one rare term takes the fast path."""
    query = "rare common"
    rng = random.Random(9)
    texts = [f"common filler{rng.randint(0, 500)}" for _ in range(20_000)]
    for n in range(0, 20_000, 400):
        texts[n] += " rare"
    conn = _table(tmp_path / "index.sqlite3", texts)
    plain, fast = _both(conn, query, 5)
    assert fast is not None
    assert fast == plain
    conn.close()


def test_figures_follow_the_index_as_it_changes(tmp_path, monkeypatch):
    """Per-term counts are cached per generation: a commit that changes them is seen.

    Before the commit "rare" is rarer than "mid", so its rows lead; after it "rare" is in
    thousands of rows and the "mid" rows lead. Counts kept from before would keep the old order.
    """
    monkeypatch.setattr(topk, "PLAIN_BELOW", 0)
    monkeypatch.setattr(topk, "READ_SHARE", 1.0)
    monkeypatch.setattr(topk, "TRY_BELOW", 1.0)
    monkeypatch.setattr(topk, "READ_LIMIT", 300)
    path = tmp_path / "index.sqlite3"
    texts = ["rare"] * 20 + ["mid"] * 200 + ["pad common"] * 6_000
    conn = _table(path, texts)
    plain, fast = _both(conn, "rare mid common", 10)
    assert fast == plain
    assert set(fast) < set(range(1, 21))
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO hits (rowid, text) VALUES (?, ?)",
        [(10_000 + n, "rare pad pad pad pad pad pad pad") for n in range(4_000)],
    )
    _sources(conn, range(10_000, 14_000))
    conn.execute("COMMIT")
    plain, fast = _both(conn, "rare mid common", 10)
    assert fast == plain
    assert set(fast) < set(range(21, 221))
    conn.close()


def test_terms_that_are_not_one_token_fall_back(eager):
    """The tokens come from FTS5's own tokenizer. No term of query_terms was found that FTS5
    splits or drops, but if one ever is (a newer Unicode), the fast path leaves it to FTS5."""
    assert vocab.tokens("Café") == ("cafe",)
    assert vocab.tokens("ALPHA") == ("alpha",)
    assert vocab.tokens("a\u00b7b") == ("a", "b")
    assert vocab.tokens("\u0300") == ()
    conn = _table(":memory:", ["a b"] * 5 + ["a"] * 50 + ["z"] * 500)
    conn.execute("BEGIN")
    assert topk.fast(conn, ["a", "b"], 3) is not None
    assert topk.fast(conn, ["a\u00b7b", "a"], 3) is None
    assert topk.fast(conn, ["\u0300", "a"], 3) is None
    conn.execute("COMMIT")
    conn.close()


def test_bm25_reproduction_agrees_with_this_sqlite():
    assert bm25.agrees_with_fts5()
    assert bm25.varints(bytes([0x8F, 0x50, 0x05])) == [2000, 5]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=texts_strategy,
    deleted=st.sets(st.integers(1, 120), max_size=60),
    added=st.lists(st.lists(st.sampled_from(SKEWED), min_size=1, max_size=8).map(" ".join)),
    query=query_strategy,
    k=st.integers(1, 10),
    try_below=st.sampled_from([0.5, 1.5, 1e9]),
    and_cost=st.sampled_from([0.0, 1e9]),
)
def test_the_fast_answer_is_the_plain_answer_after_deletes(
    eager, monkeypatch, texts, deleted, added, query, k, try_below, and_cost
):
    """Rows deleted (FTS5 keeps delete markers until a merge) and rows added after them, some
    under reused rowids, as when a session log or notes.md is read again."""
    monkeypatch.setattr(topk, "TRY_BELOW", try_below)
    monkeypatch.setattr(candidates, "AND_COST", and_cost)
    conn = _table(":memory:", texts)
    try:
        conn.execute("BEGIN")
        conn.executemany("DELETE FROM hits WHERE rowid = ?", [(n,) for n in sorted(deleted)])
        conn.executemany("DELETE FROM sources WHERE rowid = ?", [(n,) for n in sorted(deleted)])
        (top,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM hits").fetchone()
        conn.executemany(
            "INSERT INTO hits (rowid, text) VALUES (?, ?)",
            [(top + n, text) for n, text in enumerate(added, 1)],
        )
        _sources(conn, range(top + 1, top + len(added) + 1))
        conn.execute("COMMIT")
        plain, fast = _both(conn, query, k)
        assert topk.fallback(conn, match_expression(query), k) == plain
        if fast is not None:
            assert fast == plain
    finally:
        conn.close()


def test_only_rows_that_may_hold_a_skipped_term_are_tokenized(tmp_path, monkeypatch):
    """A read row that holds no skipped term scores what FTS5 ranked it: it is not tokenized.

    3,000 rows hold "rare" (read), 12,000 "mid" (skipped, its holders found by an AND), and 30
    hold both; the rows scored one by one are at most those 30.
    """
    rng = random.Random(3)
    texts = [f"filler{rng.randint(0, 900)} pad" for _ in range(60_000)]
    for n in range(0, 60_000, 20):
        texts[n] += " rare"
    for n in range(1, 60_000, 5):
        texts[n] += " mid"
    for n in range(0, 3_000, 100):
        texts[n] += " mid"
    conn = _table(tmp_path / "index.sqlite3", texts)
    tokenized: list[int] = []
    counts = tokencount.counts

    def counting(conn, rowids, tokens, table):
        tokenized.extend(rowids)
        return counts(conn, rowids, tokens, table)

    monkeypatch.setattr(tokencount, "counts", counting)
    monkeypatch.setattr(topk, "TRY_BELOW", 1.5)  # "mid" is not much commoner than "rare"
    plain, fast = _both(conn, "mid rare", 5)
    assert fast is not None
    assert fast == plain
    assert len(tokenized) <= 30
    conn.close()


@pytest.mark.parametrize("seed", range(6))
def test_a_sweep_of_corpora_and_settings_agrees_with_the_plain_query(eager, monkeypatch, seed):
    """Seeded corpora big enough for every path: few rows fetched (PARTS_FIRST 1, so the rows
    FTS5 did not return matter), skipped terms probed or not, batches of one row or many."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(SKEWED, k=rng.randint(1, 12))) for _ in range(150)]
    conn = _table(":memory:", texts)
    answered = 0
    for _ in range(60):
        monkeypatch.setattr(topk, "TRY_BELOW", rng.choice([0.5, 1.0, 1.5, 1e9]))
        monkeypatch.setattr(candidates, "AND_COST", rng.choice([0.0, 1e9]))
        monkeypatch.setattr(topk, "PARTS_FIRST", rng.choice([1, 4, 256]))
        monkeypatch.setattr(candidates, "BATCH", rng.choice([1, 64]))
        query = " ".join(rng.sample(WORDS, rng.randint(2, 4)))
        plain, fast = _both(conn, query, rng.randint(1, 10))
        if fast is not None:
            answered += 1
            assert fast == plain, query
    conn.close()
    assert answered >= 15


def test_k_below_one_is_left_to_the_plain_query(eager):
    conn = _table(":memory:", ["alpha beta"] * 40 + ["alpha"] * 400)
    conn.execute("BEGIN")
    assert topk.fast(conn, ["alpha", "beta"], 0) is None
    assert topk.best_rowids(conn, ["alpha", "beta"], '"alpha" OR "beta"', 0) == []
    conn.execute("COMMIT")
    conn.close()


def _memoryd_modules() -> list[str]:
    import memoryd

    root = Path(memoryd.__file__).parent
    return sorted(
        ".".join(("memoryd", *path.relative_to(root).with_suffix("").parts))
        for path in root.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )


@pytest.mark.parametrize("module", _memoryd_modules())
def test_each_module_can_be_imported_first(module):
    """No import cycle bites whichever module a tool or test imports first."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _numbered(
    path, memory: list[tuple[str, str, int, str]], order: list[int]
) -> sqlite3.Connection:
    """An index of memory's rows (text, session, record, time), row memory[i] under rowid
    order[i]: the same memory numbered as another build of the index would number it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(indexer.SCHEMA[0])
    conn.execute(indexer.SCHEMA[1])
    conn.execute("BEGIN")
    for rowid, (text, session, record, time) in zip(order, memory, strict=True):
        conn.execute("INSERT INTO hits (rowid, text) VALUES (?, ?)", (rowid, text))
        conn.execute(
            "INSERT INTO sources VALUES (?, 'session', ?, 0, ?, ?, 'user', 'private', 0)",
            (rowid, session, record, time),
        )
    conn.execute("COMMIT")
    return conn


@pytest.mark.parametrize("seed", range(4))
def test_the_same_memory_numbered_otherwise_gives_the_same_answer(eager, monkeypatch, seed):
    """The live index numbers rows as they arrived, a rebuild session by session: equal scores
    (repeated texts) must not be ordered by that numbering, in the spec's top k (fast path and
    fallback) nor in the spec's ranking the modes read (maxscore.spec_ranked)."""
    monkeypatch.setattr(maxscore, "PLAIN_BELOW", 0)
    rng = random.Random(seed)
    repeated = ["alpha", "alpha Beta", "gamma gamma", "zeta eta theta", "alpha gamma", "iota"]
    memory = []
    for record in range(300):
        text = rng.choice(repeated) if rng.random() < 0.7 else " ".join(rng.choices(SKEWED, k=3))
        session = f"s{rng.randrange(4)}"
        time = f"2026-11-0{1 + rng.randrange(3)}T12:0{rng.randrange(2)}:00Z"
        memory.append((text, session, record, time))
    queries = [
        " ".join(rng.sample(WORDS, rng.randint(1, 3)) if n % 2 else ["alpha", "gamma"])
        for n in range(40)
    ]
    live = list(range(1, len(memory) + 1))
    by_session = sorted(range(len(memory)), key=lambda i: (memory[i][1], i))
    rebuilt = [0] * len(memory)
    for rowid, i in enumerate(by_session, 1):
        rebuilt[i] = rowid
    answers = []
    for order in (live, rebuilt):
        conn = _numbered(":memory:", memory, order)
        what = {rowid: memory[i][1:3] for i, rowid in enumerate(order)}
        found = []
        conn.execute("BEGIN")
        for n, query in enumerate(queries):
            terms, expression, k = query_terms(query), match_expression(query), 1 + n % 10
            found.append([what[r] for r in topk.best_rowids(conn, terms, expression, k)])
            found.append([what[r] for r in topk.fallback(conn, expression, k)])
            ranked = maxscore.spec_ranked(conn, terms, expression, k)
            found.append([what[r] for r, _bm25 in ranked])
        conn.execute("COMMIT")
        conn.close()
        answers.append(found)
    assert answers[0] == answers[1]
