"""Recall modes context and hybrid: context's lexical list puts a long run of equal scores in
ties.py's order, so the live index and a rebuild of the same memory keep the same records.

A home of repeated requests ties hundreds of rows on one bm25 for a word of them; the list is cut
at CANDIDATES rows (hybrid's: LEXICAL_DEPTH within READ_BUDGET). FTS5 leaves equal scores by
rowid, which the live index gives out as records arrived and a rebuild session by session: cut
there, the live index kept the oldest records saying the words, a rebuild others.
"""

import json
import random
import sqlite3

import pytest

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from memoryd.modes import context, hybrid
from memoryd.search import maxscore, ties
from memoryd.search.query import Query, terms_expression

TEMPLATES = [
    "remind me to water the plants on the balcony",
    "water the plants",
    "water plants balcony now",
]
SESSIONS = [f"s{n:02d}" for n in range(10)]
# (limit, budget): context's own call, and hybrid's.
CALLS = [(context.CANDIDATES, None), (hybrid.LEXICAL_DEPTH, hybrid.READ_BUDGET)]


def _records(draw: random.Random, count: int, templates: list[str]) -> str:
    lines = []
    for _ in range(count):
        when = f"2026-09-0{draw.randint(1, 3)}T12:00:{draw.randint(0, 3):02d}Z"
        record = {"type": "user", "time": when, "content": draw.choice(templates)}
        lines.append(json.dumps(record) + "\n")
    return "".join(lines)


def _home(tmp_path, each: int = 60, templates: list[str] = TEMPLATES) -> tuple[Home, Index]:
    """Sessions of repeated requests, indexed live: each session's first records, then its later
    ones in the reverse order of the names, so the live rowids run against a rebuild's; each
    records at a time, each saying one of templates."""
    draw = random.Random(5)
    home = Home(tmp_path / "home")
    for session in SESSIONS:
        ensure_dir(home.session_log(session).parent)
        home.session_log(session).write_text(_records(draw, each, templates))
    ensure_dir(home.memory)
    index = Index(home, mode="context")
    index.open()
    index.catch_up_all()
    for session in reversed(SESSIONS):
        with open(home.session_log(session), "a") as log:
            log.write(_records(draw, each, templates))
    index.catch_up_all()
    return home, index


def _lists(home: Home, terms: list[str]) -> dict[tuple, list[tuple]]:
    """Each call's lexical list as (session, record, bm25), with the reference: every row of the
    plain query, equal scores put in ties.key's order, cut at the call's limit."""
    conn = sqlite3.connect(home.index_db, isolation_level=None)
    out: dict[tuple, list[tuple]] = {}
    conn.execute("BEGIN")
    try:
        every = conn.execute(context.RANKED, (terms_expression(terms), -1)).fetchall()
        ordered = ties.in_order(conn, every)
        for limit, budget in CALLS:
            found = context.ranked(conn, terms, limit, budget)
            out[limit, budget] = _named(conn, found)
            out["reference", limit] = _named(conn, ordered[:limit])
    finally:
        conn.execute("COMMIT")
        conn.close()
    return out


def _named(conn, found: list[tuple[int, float]]) -> list[tuple]:
    where = "SELECT session, record FROM sources WHERE rowid = ?"
    return [(*conn.execute(where, (rowid,)).fetchone(), score) for rowid, score in found]


@pytest.mark.parametrize("templates", [TEMPLATES, TEMPLATES[:1]], ids=["three", "one"])
@pytest.mark.parametrize("fast", [False, True], ids=["plain-query", "maxscore"])
def test_a_long_tie_keeps_the_same_records_live_and_rebuilt(tmp_path, monkeypatch, fast, templates):
    """ "balcony" ties many rows (with one request said again and again, most of the home, a run
    longer than the rows asked of FTS5 past the cut): context's list and hybrid's hold the newest
    of them, in ties.py's order, on the live index and after a reindex alike; a row that scores
    better is never pushed out by the tie."""
    if fast:  # contextrank's own ranking (maxscore.py) answers, not the plain query
        monkeypatch.setattr(maxscore, "PLAIN_BELOW", 0)
    home, index = _home(tmp_path, templates=templates)
    try:
        terms = context.query_terms(Query.parse("balcony"))
        live = _lists(home, terms)
        index.reindex()
        rebuilt = _lists(home, terms)
    finally:
        index.close()
    for limit, budget in CALLS:
        found = live[limit, budget]
        assert len(found) == limit
        assert found == live["reference", limit]
        assert rebuilt[limit, budget] == found
        # The tie runs past the cut: it is what chose the rows.
        assert len({score for _, _, score in found}) < limit
    assert home.index_db.exists()


def test_recall_answers_alike_live_and_rebuilt(tmp_path):
    """context's recall over the same memory answers the same records, live and rebuilt."""
    home, index = _home(tmp_path, 300)
    try:
        live = _answer(home)
        index.reindex()
        rebuilt = _answer(home)
    finally:
        index.close()
    assert live == rebuilt
    assert len(live) == 5
    assert home.memory.is_dir()


def _answer(home: Home) -> list[tuple]:
    conn = sqlite3.connect(home.index_db, isolation_level=None)
    try:
        hits = context.search(conn, Query.parse("balcony"), 5)
    finally:
        conn.close()
    return [(hit.session, hit.record, hit.time) for hit in hits]
