"""The common terms' row counts taken in one pass (index/warmcounts.py): after it, recall counts
none of them itself, and the counts are FTS5's; a close interrupts the pass at once; memoryd
runs it once its catch-up is done."""

import asyncio
import logging
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from memoryd.config import load
from memoryd.home import Home
from memoryd.index import warmcounts
from memoryd.index.index import Index
from memoryd.modes import context, contextrank
from memoryd.modes.lexbound import TermCounts
from memoryd.search import bm25, generation, topk, vocab
from memoryd.search.query import Query, match_expression, query_terms
from memoryd.server import prepare
from tests.memoryd.test_scheduling import _config, _log
from tests.memoryd.test_topk import eager  # noqa: F401  (the fixture)

# Words whose porter stem is the word itself, so one spelling counts them in both tables.
COMMON = ["alpha", "gamma", "delta"]
RARE = ["zeta"]
QUESTION = "alpha gamma zeta delta"


@pytest.fixture
def low_bar(monkeypatch):
    """A term is common from 4 rows on (a million records' 5,000, scaled down)."""
    monkeypatch.setattr(generation, "STORE_ABOVE", 4)


def _opened(root: Path) -> Index:
    _log(root, "s-one", ["alpha gamma delta", "alpha alpha gamma", "delta zeta"] * 3)
    _log(root, "s-two", ["gamma alpha", "theta delta", "alpha"] * 2)
    index = Index(Home(root), mode="context")
    index.open()
    index.catch_up_all()
    return index


def _holding(conn: sqlite3.Connection, table: str, term: str) -> int:
    query = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"  # noqa: S608 (constants)
    return conn.execute(query, (f'"{term}"',)).fetchone()[0]


def _recall_counts(index: Index) -> tuple[set[str], dict[str, int], dict[str, int]]:
    """The terms the spec's and context's searches of QUESTION count themselves, and the counts
    each table's state holds after."""
    with index.reader() as conn:
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        conn.execute("BEGIN")
        topk.best_rowids(conn, query_terms(QUESTION), match_expression(QUESTION), 3)
        conn.execute("COMMIT")
        context.search(conn, Query.parse(QUESTION), 3)
        conn.set_trace_callback(None)
        conn.execute("BEGIN")
        spec_docs = dict(vocab.generation(conn).docs)
        context_docs = dict(contextrank.counts(conn).known)
        conn.execute("COMMIT")
    counting = (vocab.VOCAB_DOCS[:30], contextrank.VOCAB_DOCS[:30])
    counted = {s.split("'")[1] for s in seen if s.startswith(counting)}
    return counted, spec_docs, context_docs


@pytest.mark.usefixtures("eager", "low_bar")
@pytest.mark.parametrize("ahead", [True, False])
def test_recall_counts_no_common_term_once_they_are_counted_ahead(tmp_path, ahead):
    index = _opened(tmp_path / "home")
    try:
        if ahead:
            index.warm_counts()
        counted, spec_docs, context_docs = _recall_counts(index)
        with index.reader() as conn:
            for table, docs in (("hits", spec_docs), (contextrank.TABLE, context_docs)):
                for term in COMMON + RARE:
                    assert docs[term] == _holding(conn, table, term), (table, term)
    finally:
        index.close()
    if ahead:
        assert counted == set(RARE)  # the rare ones cost little: recall counts them
    else:
        assert counted == set(COMMON + RARE)


@pytest.mark.usefixtures("low_bar")
def test_counts_of_a_state_memoryd_did_not_make_are_not_kept(tmp_path):
    index = _opened(tmp_path / "home")
    try:
        other = sqlite3.connect(index.path, isolation_level=None)
        other.execute("INSERT INTO hits (text) VALUES ('alpha gamma')")  # another program's
        other.close()
        with index.reader() as conn:
            assert warmcounts.warm(conn)[:2] == (0, 0)
    finally:
        index.close()


@pytest.mark.usefixtures("low_bar")
def test_a_close_interrupts_the_pass_and_none_starts_after(tmp_path, monkeypatch, caplog):
    index = _opened(tmp_path / "home")
    reading = threading.Event()

    def endless(conn: sqlite3.Connection, above: int) -> int:
        reading.set()
        endless_rows = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)"
        return conn.execute(f"{endless_rows} SELECT count(*) FROM n").fetchone()[0]

    monkeypatch.setattr(vocab, "warm", endless)
    caplog.set_level(logging.INFO, logger="memoryd.index.index")
    warming = threading.Thread(target=index.warm_counts)
    warming.start()
    try:
        assert reading.wait(10)
        time.sleep(0.05)  # well inside the endless count
        started = time.monotonic()
        index.close()
        took = time.monotonic() - started
    finally:
        warming.join(10)
    assert not warming.is_alive() and took < 5
    assert "common terms not counted ahead: interrupted" in caplog.text
    # Opened again and stopped for good, no pass starts (memoryd closing).
    reading.clear()
    index.open()
    try:
        index.stop_warming(for_good=True)
        index.warm_counts()
        assert not reading.is_set()
    finally:
        index.close()
    index.warm_counts()  # queued before a close, run after it: nothing to count, no error
    assert not reading.is_set()


@pytest.mark.usefixtures("low_bar")
def test_memoryd_counts_the_common_terms_once_it_has_caught_up(tmp_path, caplog):
    _log(tmp_path / "home", "s-one", ["alpha gamma delta", "alpha gamma", "delta alpha"] * 2)
    service = prepare(load(_config(tmp_path, '[recall]\nmode = "context"\n')))
    caplog.set_level(logging.INFO, logger="memoryd.index.index")

    async def scenario():
        service.start_catch_up()
        assert await asyncio.to_thread(service.caught_up.wait, 15)
        deadline = time.monotonic() + 15
        while "counted ahead the common terms" not in caplog.text:
            assert time.monotonic() < deadline, caplog.text
            await asyncio.sleep(0.02)

    try:
        asyncio.run(scenario())
    finally:
        service.close()
    # alpha, gamma and delta; context's table holds the rows' date words besides.
    assert "counted ahead the common terms of recall (3, context " in caplog.text


@pytest.mark.usefixtures("low_bar")
def test_hybrids_yardstick_takes_the_counts_taken_ahead(tmp_path):
    index = _opened(tmp_path / "home")
    try:
        index.warm_counts()
        with index.reader() as conn:
            seen: list[str] = []
            conn.set_trace_callback(seen.append)
            conn.execute("BEGIN")
            bound = TermCounts().bound(conn, COMMON)
            conn.execute("COMMIT")
            conn.set_trace_callback(None)
            (rows,) = conn.execute("SELECT count(*) FROM context_hits").fetchone()
            holding = [_holding(conn, contextrank.TABLE, term) for term in COMMON]
    finally:
        index.close()
    assert bound == sum(bm25.idf(rows, n) for n in holding) * bm25.PHRASE_BOUND
    counting = [s for s in seen if "MATCH" in s or s.startswith(contextrank.VOCAB_DOCS[:30])]
    assert counting == []
