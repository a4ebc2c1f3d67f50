"""context's lexical ranking (contextrank.py over search/maxscore.py): the same rows, order and
bm25 as context's plain FTS5 query over its three weighted columns, on real SQLite; and the
spec's part of a context recall, by maxscore over the spec's table.

Small vocabularies with porter stems ("run", "running", "runs" are one token) and repeated texts
make ties and phrases of one token common; the thresholds are lowered so that the fast path, not
the plain query, answers most queries.
"""

import random
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.index import indexer
from memoryd.modes import arrange, context, contextrank
from memoryd.search import bm25, candidates, generation, maxscore, ties, tokencount, topk
from memoryd.search.query import Query, terms_expression
from tests.memoryd.test_topk import _reference, _sources

WEIGHTS = (1.0, context.NEAR_WEIGHT, context.DATE_WEIGHT)
WORDS = ["alpha", "run", "running", "gamma", "delta", "May", "zeta", "eta", "theta", "iota"]
SKEWED = [word for rank, word in enumerate(WORDS, 1) for _ in range(max(1, 12 // rank))]


def _table(path, rows: list[tuple[str, str, str]]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(indexer.SCHEMA[0])  # hits: the index generation's figures are its
    conn.execute(indexer.SCHEMA[1])  # sources: what orders equal scores (search/ties.py)
    conn.execute(context.SCHEMA[0])
    conn.execute("BEGIN")
    _insert(conn, rows, 1)
    generation.seal(conn)
    conn.execute("COMMIT")
    return conn


def _insert(conn: sqlite3.Connection, rows: list[tuple[str, str, str]], first: int) -> None:
    conn.executemany(
        "INSERT INTO context_hits (rowid, text, near, date) VALUES (?, ?, ?, ?)",
        [(n, *row) for n, row in enumerate(rows, first)],
    )
    conn.executemany(
        "INSERT INTO hits (rowid, text) VALUES (?, ?)",
        [(n, row[0]) for n, row in enumerate(rows, first)],
    )
    _sources(conn, range(first, first + len(rows)))


def _random_rows(rng: random.Random, count: int) -> list[tuple[str, ...]]:
    """Rows of up to 8 words of text, 30 of neighbours and 3 of date, drawn from SKEWED."""
    return [
        tuple(" ".join(rng.choices(SKEWED, k=rng.randint(0, n))) for n in (8, 30, 3))
        for _ in range(count)
    ]


def _both(conn: sqlite3.Connection, terms: list[str], k: int):
    conn.execute("BEGIN")
    try:
        plain = conn.execute(context.RANKED, (terms_expression(terms), k)).fetchall()
        fast = contextrank.ranked(conn, terms, k, context.LEXICAL)
        through = context.ranked(conn, terms, k)
        in_key_order = _in_key_order(conn, terms, k)
    finally:
        conn.execute("COMMIT")
    assert through == in_key_order
    return plain, fast


def _in_key_order(conn: sqlite3.Connection, terms: list[str], k: int) -> list[tuple[int, float]]:
    """The plain query's rows, every one of them, equal scores put in ties.key's order, cut at k:
    context's lexical list (its order among equal scores decides which rows a cut keeps)."""
    every = conn.execute(context.RANKED, (terms_expression(terms), -1)).fetchall()
    return ties.in_order(conn, every)[:k]


@pytest.fixture()
def eager(monkeypatch):
    """Thresholds low enough that tiny tables take the fast path."""
    monkeypatch.setattr(maxscore, "PLAIN_BELOW", 0)
    monkeypatch.setattr(maxscore, "READ_SHARE", 1.0)
    monkeypatch.setattr(maxscore, "WIDER_SHARE", 1.0)


column = st.one_of(
    st.lists(st.sampled_from(SKEWED), min_size=0, max_size=10).map(" ".join),
    st.sampled_from(["alpha", "run running", "May May eta", ""]),  # repeats: ties
)
rows_strategy = st.lists(st.tuples(column, column, column), min_size=1, max_size=100)
terms_strategy = st.lists(
    st.sampled_from([*WORDS, "runs", "ALPHA", "nothere"]), min_size=1, max_size=6, unique=True
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rows=rows_strategy,
    terms=terms_strategy,
    k=st.integers(1, 40),
    try_below=st.sampled_from([0.0, 0.5, 1.5, 1e9]),
    read_share=st.sampled_from([0.1, 0.5, 1.0]),
    wider_share=st.sampled_from([0.3, 0.7, 1.0]),
)
def test_the_ranking_is_the_plain_querys(
    eager, monkeypatch, tmp_path_factory, rows, terms, k, try_below, read_share, wider_share
):
    """Every split of the terms (more read when rows of skipped terms only could reach the k-th
    score, with bounds from idf or from each term's best row) gives context's plain answer,
    rowids and bm25 to the bit."""
    monkeypatch.setattr(maxscore, "TRY_BELOW", try_below)
    monkeypatch.setattr(maxscore, "READ_SHARE", read_share)
    monkeypatch.setattr(maxscore, "WIDER_SHARE", wider_share)
    conn = _table(tmp_path_factory.mktemp("rank") / "index.sqlite3", rows)
    try:
        for _ in range(2):  # the second time with the best rows looked up the first time
            plain, fast = _both(conn, terms, k)
            if fast is not None:
                assert fast == plain
    finally:
        conn.close()


@pytest.mark.parametrize("seed", range(4))
def test_most_queries_take_the_fast_path_and_agree(eager, monkeypatch, tmp_path, seed):
    rng = random.Random(seed)
    conn = _table(tmp_path / "index.sqlite3", _random_rows(rng, 2000))
    answered = 0
    for _ in range(60):
        monkeypatch.setattr(maxscore, "TRY_BELOW", rng.choice([0.3, 1.0, 1.3]))
        terms = rng.sample(WORDS, rng.randint(2, 5))
        plain, fast = _both(conn, terms, rng.choice([1, 10, 40, 100]))
        if fast is not None:
            answered += 1
            assert fast == plain, terms
    conn.close()
    assert answered >= 30


def test_more_terms_are_read_when_the_rare_rows_score_low(tmp_path, monkeypatch):
    """The rare term's rows are long, so they score below what a short row of the next term
    could: that term is read too (not the plain query), and the answer is the plain one."""
    rows = [("rare " + "pad " * 40, "", "")] * 30 + [("mid", "", "")] * 300
    rows += [("common", "", "")] * 5000 + [("other", "", "")] * 3000
    conn = _table(tmp_path / "index.sqlite3", rows)
    widened = []
    split = maxscore._split

    def watching(docs, bound, below, most_rows, at_least, rows_at_least):
        if at_least:
            widened.append(below)
        return split(docs, bound, below, most_rows, at_least, rows_at_least)

    monkeypatch.setattr(maxscore, "_split", watching)
    plain, fast = _both(conn, ["rare", "mid", "common"], 10)
    assert widened
    assert fast == plain
    assert all(30 < rowid <= 330 for rowid, _ in plain)  # the short rows of "mid"
    conn.close()


def test_counts_follow_each_change_of_the_table(eager, monkeypatch, tmp_path):
    """Counts are kept per state: a commit that rewrites old rows' neighbour column (a term
    added to rows that lacked it) and one that changes context_hits alone are both seen."""
    monkeypatch.setattr(maxscore, "TRY_BELOW", 1.0)
    rows = [("rare", "", "")] * 20 + [("mid", "", "")] * 200 + [("pad common", "", "")] * 3000
    conn = _table(tmp_path / "index.sqlite3", rows)
    plain, fast = _both(conn, ["rare", "mid", "common"], 10)
    assert fast == plain
    assert [rowid for rowid, _ in plain] == list(range(1, 11))
    # A sealed commit: rows rewritten with "rare" in their neighbours, one new row.
    conn.execute("BEGIN")
    mark = generation.begin(conn)
    conn.executemany("DELETE FROM context_hits WHERE rowid = ?", [(n,) for n in range(221, 2221)])
    conn.executemany(
        "INSERT INTO context_hits (rowid, text, near, date) VALUES (?, ?, ?, ?)",
        [(n, "pad common", "rare rare", "") for n in range(221, 2221)],
    )
    _insert(conn, [("mid", "", "")], 5000)
    generation.seal(conn, mark)
    conn.execute("COMMIT")
    plain, fast = _both(conn, ["rare", "mid", "common"], 10)
    assert fast == plain
    # context_hits changed by another program, the generation record left as it was.
    conn.execute("INSERT INTO context_hits (rowid, text) VALUES (9000, 'mid mid mid')")
    plain, fast = _both(conn, ["rare", "mid", "common"], 10)
    assert fast == plain
    assert fast is not None
    assert plain[0][0] == 9000
    conn.close()


def test_terms_that_are_not_one_token_leave_it_to_the_plain_query(eager, tmp_path):
    probe = context.LEXICAL.probe()
    assert probe.tokens("Running") == ("run",)
    assert probe.tokens("a\u00b7b") == ("a", "b")
    conn = _table(tmp_path / "index.sqlite3", [("a b", "", "")] * 5 + [("a", "", "")] * 50)
    plain, fast = _both(conn, ["a\u00b7b", "a"], 3)
    assert fast is None
    assert len(plain) == 3
    conn.close()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(SKEWED), min_size=1, max_size=10).map(" ".join),
        min_size=1,
        max_size=120,
    ),
    terms=terms_strategy,
    depth=st.sampled_from([1, 5, 10]),
    try_below=st.sampled_from([0.0, 1.3, 1e9]),
)
def test_spec_ranked_reads_the_scores_with_the_ranking(monkeypatch, texts, terms, depth, try_below):
    """The spec's part of a context recall (maxscore over the spec's hits table, or its plain
    query): the plain query's rowids, equal scores the newer row first (search/ties.py), and the
    rows it is sure of as arrange.sure finds them with
    one FTS5 query a row."""
    monkeypatch.setattr(maxscore, "PLAIN_BELOW", 0)
    monkeypatch.setattr(maxscore, "READ_SHARE", 1.0)
    monkeypatch.setattr(maxscore, "WIDER_SHARE", 1.0)
    monkeypatch.setattr(maxscore, "TRY_BELOW", try_below)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute(indexer.SCHEMA[0])
        conn.execute(indexer.SCHEMA[1])
        conn.executemany("INSERT INTO hits (rowid, text) VALUES (?, ?)", list(enumerate(texts, 1)))
        _sources(conn, range(1, len(texts) + 1))
        query = Query.parse(" ".join(terms))
        plain = _reference(conn, query.expression, depth)
        conn.execute("BEGIN")
        try:
            found = context.spec_ranked(conn, query, depth)
        finally:
            conn.execute("COMMIT")
        assert list(found) == plain
        assert found.sure == arrange.sure(conn, query.expression, plain, depth)
    finally:
        conn.close()


@pytest.fixture()
def eager_exact(monkeypatch):
    """topk's thresholds low enough that tiny tables take its path (it answers before maxscore)."""
    monkeypatch.setattr(topk, "PLAIN_BELOW", 0)
    monkeypatch.setattr(topk, "READ_SHARE", 1.0)
    monkeypatch.setattr(topk, "READ_LIMIT", 10**6)


# context's plain query, equal scores in the order recall gives them (search/ties.py): the newer
# row first, then kind, session, record, rowid (_sources' times are whole seconds).
RANKED_TIED = (
    f"SELECT c.rowid, bm25(context_hits, 1.0, {context.NEAR_WEIGHT}, {context.DATE_WEIGHT})"
    " AS score FROM context_hits c JOIN sources s ON s.rowid = c.rowid"
    " WHERE context_hits MATCH ?"
    " ORDER BY score, s.time DESC, s.kind, s.session, s.record, c.rowid LIMIT ?"
)


def _exact(conn: sqlite3.Connection, terms: list[str], k: int):
    """topk's exact answer (equal scores in ties.py's order) beside the plain query's in that
    order; context's own ranking (its candidates) is the plain query's in ties.py's order."""
    conn.execute("BEGIN")
    try:
        tied = conn.execute(RANKED_TIED, (terms_expression(terms), k)).fetchall()
        state = contextrank.counts(conn)
        found = topk.exact(conn, context.LEXICAL, lambda _conn: state, terms, k)
        through = context.ranked(conn, terms, k)
        in_key_order = _in_key_order(conn, terms, k)
    finally:
        conn.execute("COMMIT")
    assert through == in_key_order
    return tied, None if found is None else [(rowid, -score) for rowid, score in found]


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rows=rows_strategy,
    terms=terms_strategy,
    k=st.integers(1, 40),
    try_below=st.sampled_from([0.0, 0.5, 1.5, 1e9]),
    and_cost=st.sampled_from([0.0, 1e9]),
    parts_first=st.sampled_from([1, 3, 256]),
    batch=st.sampled_from([1, 64]),
)
def test_topk_scores_context_rows_as_fts5_does(
    eager_exact,
    monkeypatch,
    tmp_path_factory,
    rows,
    terms,
    k,
    try_below,
    and_cost,
    parts_first,
    batch,
):
    """topk's own scoring of context_hits (three columns, the neighbour one weighed 0.4: each
    time a term occurs adds its column's weight) gives the plain query's rows and bm25 to the
    bit, whichever terms it reads, probes or scores row by row."""
    monkeypatch.setattr(topk, "TRY_BELOW", try_below)
    monkeypatch.setattr(candidates, "AND_COST", and_cost)
    monkeypatch.setattr(topk, "PARTS_FIRST", parts_first)
    monkeypatch.setattr(candidates, "BATCH", batch)
    conn = _table(tmp_path_factory.mktemp("exact") / "index.sqlite3", rows)
    try:
        plain, found = _exact(conn, terms, k)
        if found is not None:
            assert found == plain
    finally:
        conn.close()


@pytest.mark.parametrize("seed", range(3))
def test_topk_answers_most_context_queries_and_agrees(eager_exact, monkeypatch, tmp_path, seed):
    rng = random.Random(seed)
    conn = _table(tmp_path / "index.sqlite3", _random_rows(rng, 1500))
    answered = 0
    for _ in range(60):
        monkeypatch.setattr(topk, "TRY_BELOW", rng.choice([0.5, 1.0, 1.5, 1e9]))
        terms = rng.sample(WORDS, rng.randint(2, 5))
        plain, found = _exact(conn, terms, rng.choice([1, 10, 40]))
        if found is not None:
            answered += 1
            assert found == plain, terms
    conn.close()
    assert answered >= 20


def test_a_common_term_of_context_is_skipped_at_the_default_thresholds(tmp_path, monkeypatch):
    """A question's rare word and a word in every row's date column: topk reads the rare word's
    rows only, and scores them, common word included, as FTS5 would."""
    rows = [("pad", "", "May 2023")] * 6000 + [("rare words here", "rare", "May 2023")] * 12
    rows += [("rare", "", "June 2024")] * 3
    conn = _table(tmp_path / "index.sqlite3", rows)
    tokenized: list[int] = []
    counts = tokencount.counts

    def counting(conn, rowids, tokens, table):
        tokenized.extend(rowids)
        return counts(conn, rowids, tokens, table)

    monkeypatch.setattr(tokencount, "counts", counting)
    plain, found = _exact(conn, ["rare", "2023"], 5)
    assert found is not None
    assert found == plain
    assert set(tokenized) <= set(range(6001, 6016))  # the rare word's rows only
    conn.close()


def test_a_reproduction_that_ignores_column_weights_is_caught(monkeypatch):
    """The self check scores weighted columns too: bm25 that adds 1.0 whatever the column would
    not be trusted, and recall would use FTS5's own scores."""
    real = bm25.frequency
    monkeypatch.setattr(bm25, "frequency", lambda times, weights: real(times, ()))
    bm25.agrees_with_fts5.cache_clear()
    try:
        assert not bm25.agrees_with_fts5()
    finally:
        monkeypatch.setattr(bm25, "frequency", real)
        bm25.agrees_with_fts5.cache_clear()
    assert bm25.agrees_with_fts5()
