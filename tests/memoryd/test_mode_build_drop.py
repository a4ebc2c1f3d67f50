"""The old mode's tables are taken apart a bounded job at a time too: the first part of a build
renames them aside (no page freed), each next part deletes at most DROP_BYTES of their rows (every
freed page zeroed) or drops one found empty, and only then are rows built. A stop or a start in
any mode between those parts ends with the schema a build in one go gives, nothing set aside
left; the tables set aside never serve recall. The start's line says recall answers meanwhile."""

import logging
import sqlite3

import pytest

from memoryd import modes
from memoryd.home import Home
from memoryd.index.index import Index
from tests.memoryd.test_mode_build_parts import _as_in_one_go, _filling, _spec_home
from tests.memoryd.test_reindex import append

ROWS = 120
BUDGET = 6_000  # modes.DROP_BYTES here: the old tables hold many times it


def _hybrid_home(tmp_path, monkeypatch) -> Home:
    """A home whose index is in hybrid, every row with its vector."""
    pytest.importorskip("onnxruntime")
    from memoryd.modes import hybrid

    monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)  # no vectors computed here
    home = _spec_home(tmp_path, {})
    turns = [
        {"type": "user", "time": "2026-05-01T10:00:00Z", "content": f"turn {n} " + "word " * 60}
        for n in range(ROWS)
    ]
    append(home, "mm-old", turns)
    index = Index(home, mode="hybrid")
    index.open()
    index.catch_up_all()
    index.close()
    conn = sqlite3.connect(home.index_db)
    conn.execute("INSERT OR REPLACE INTO vectors SELECT rowid, randomblob(384) FROM sources")
    conn.execute("DELETE FROM vector_pending")
    conn.commit()
    conn.close()
    return home


def _old_bytes(path, names: list[str]) -> int:
    """The bytes of the rows left in the old mode's tables: those named (before the first part),
    or those set aside (after it)."""
    conn = sqlite3.connect(path)
    try:
        held = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        total = 0
        for name in names:
            if name not in held:
                continue
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')]
            size = " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in columns)
            total += conn.execute(f'SELECT coalesce(sum({size}), 0) FROM "{name}"').fetchone()[0]
        return total
    finally:
        conn.close()


def _aside(path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [
            n
            for (n,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE name GLOB 'recall_mode_old*' ORDER BY name"
            )
        ]
    finally:
        conn.close()


OLD = [
    "context_hits_data",
    "context_hits_idx",
    "context_hits_content",
    "context_hits_docsize",
    "vectors",
    "vector_pending",
]


def test_each_job_removes_a_bounded_part_of_the_old_tables(tmp_path, monkeypatch):
    home = _hybrid_home(tmp_path, monkeypatch)
    monkeypatch.setattr(modes, "DROP_BYTES", BUDGET)
    monkeypatch.setattr(modes, "FILL_BATCH", 10)
    before = _old_bytes(home.index_db, OLD)
    assert before > 20 * BUDGET
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    removed, left = [], before
    try:
        index.catching_up = None
        while True:
            done = index.prepare_mode_part()
            now = _old_bytes(home.index_db, _aside(home.index_db))
            removed.append(left - now)
            left = now
            if done:
                break
    finally:
        index.close()
    assert removed[0] == 0  # the first part renamed them aside
    # A part deletes DROP_BYTES at most, and the row that reaches them (a row of context_hits'
    # text and neighbours, a few KB).
    assert max(removed) <= BUDGET + 4_000
    assert sum(removed) == before and _aside(home.index_db) == []
    _as_in_one_go(home, tmp_path)


@pytest.mark.parametrize("then", ["context-parts", "context-sync", "spec", "hybrid-parts"])
def test_a_stop_while_old_tables_are_set_aside_ends_as_a_build_in_one_go(
    tmp_path, monkeypatch, then
):
    home = _hybrid_home(tmp_path, monkeypatch)
    monkeypatch.setattr(modes, "DROP_BYTES", BUDGET)
    monkeypatch.setattr(modes, "FILL_BATCH", 10)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        index.catching_up = None
        for _ in range(3):  # set aside, then two parts of their rows removed
            assert not index.prepare_mode_part()
    finally:
        index.close()  # as a stop between parts
    assert _aside(home.index_db) and _filling(home.index_db)
    mode, _, how = then.partition("-")
    index = Index(home, mode=mode)
    index.open(defer_mode=how == "parts")
    try:
        index.catching_up = None
        while how == "parts" and not index.prepare_mode_part():
            pass
        assert not index.mode_pending
    finally:
        index.close()
    assert _aside(home.index_db) == [] and _filling(home.index_db) == []
    if mode == "spec":
        conn = sqlite3.connect(home.index_db)
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
        conn.close()
        assert not names & {"recall_mode", "context_hits", "vectors", "vector_pending"}
    else:
        _as_in_one_go(home, tmp_path, mode)


def test_the_start_says_recall_answers_by_the_spec_meanwhile(tmp_path, caplog):
    home = _spec_home(tmp_path, {"mm-1": 4})
    index = Index(home, mode="context")
    caplog.set_level(logging.INFO, logger="memoryd.index.index")
    index.open(defer_mode=True)
    index.close()
    said = [r.getMessage() for r in caplog.records if "recall mode context" in r.getMessage()]
    assert said and "recall answers by the spec's search meanwhile" in said[0]
    assert "recall waits" not in said[0]


def test_a_virtual_table_that_cannot_be_set_aside_is_dropped_whole(tmp_path, monkeypatch):
    """Its _config renamed too, FTS5 cannot read it at the DROP: the first part rolls that back
    and drops the table whole, and the build goes on as any other."""
    home = _hybrid_home(tmp_path, monkeypatch)
    monkeypatch.setattr(modes, "FTS5_ROWS", (*modes.FTS5_ROWS, "config"))
    monkeypatch.setattr(modes, "FILL_BATCH", 10)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        index.catching_up = None
        assert not index.prepare_mode_part()
        assert not [name for name in _aside(home.index_db) if "context_hits" in name]
        assert "recall_mode_old1_vectors" in _aside(home.index_db)
        while not index.prepare_mode_part():
            pass
    finally:
        index.close()
    assert _aside(home.index_db) == []
    _as_in_one_go(home, tmp_path)
