"""Recall's cached term counts are keyed to the generation memoryd writes (search/generation.py).

Whatever happens to the index file between two recalls (rows added or deleted by memoryd, a
reindex swapped in, a new file that got the old one's inode, rows updated, deleted or added in
place by another program) every recall's top k is the spec's own query's: the plain FTS5 query
`hits MATCH ? ORDER BY bm25(hits)`, rowids in the same order.
"""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.home import Home
from memoryd.index import indexer, newindex
from memoryd.index.index import Index
from memoryd.search import generation, topk, vocab
from memoryd.search.query import match_expression, query_terms
from tests.memoryd.test_scheduling import _log
from tests.memoryd.test_topk import SKEWED, WORDS, eager  # noqa: F401  (the fixture)

# The spec's query, equal scores in the order recall gives them (search/ties.py): the newer row
# first, then kind, session, record, rowid; a row without sources (another program's) last.
SPEC = (
    "SELECT h.rowid FROM hits h LEFT JOIN sources s ON s.rowid = h.rowid WHERE hits MATCH ?"
    " ORDER BY h.rank, s.time DESC, s.kind, s.session, s.record, h.rowid LIMIT ?"
)

texts = st.lists(
    st.lists(st.sampled_from(SKEWED), min_size=1, max_size=8).map(" ".join), min_size=1, max_size=6
)
sessions = st.sampled_from(["s-one", "s-two", "s-three"])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), sessions, texts),
        st.tuples(st.just("replace"), sessions, texts),  # memoryd deletes the log's rows
        st.tuples(st.just("reindex"), st.integers(1, 2)),  # one, or two with no recall between
        st.tuples(st.just("rebuilt in place")),  # a new file on the old inode, no swap
        st.tuples(st.just("foreign update"), st.integers(0, 40), texts),
        st.tuples(st.just("foreign delete"), st.integers(0, 40), st.integers(1, 3)),
        st.tuples(st.just("foreign insert"), texts),
        st.tuples(st.just("memoryd idle")),  # a catch-up with nothing new
        st.tuples(
            st.just("recall"),
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
            st.integers(1, 6),
        ),
    ),
    min_size=1,
    max_size=25,
)


def _open(root: Path) -> tuple[Home, Index]:
    _log(root, "s-one", ["alpha Beta gamma", "alpha alpha", "delta eps"] * 3)
    _log(root, "s-two", ["Beta gamma", "zeta eta theta", "alpha"] * 3)
    home = Home(root)
    index = Index(home)
    index.open()
    index.catch_up_all()
    return home, index


def _spec(path: Path, query: str, k: int) -> list[int]:
    """The spec's query on a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        return [row for (row,) in conn.execute(SPEC, (match_expression(query), k))]
    finally:
        conn.close()


def _recall(index: Index, query: str, k: int) -> tuple[list[int], list[int] | None]:
    """(recall's rowids, the fast path's or None) on one of memoryd's read connections; and every
    figure the search used is this state's own (a stale count does not always change the top k)."""
    with index.reader() as conn:
        conn.execute("BEGIN")
        try:
            found = topk.best_rowids(conn, query_terms(query), match_expression(query), k)
            fast = topk.fast(conn, query_terms(query), k)
            stats = vocab.generation(conn)
            (rows,) = conn.execute("SELECT count(*) FROM hits").fetchone()
            assert stats.rows == rows
            for token, count in stats.docs.items():
                assert count == _holding(conn, token), token
        finally:
            conn.execute("COMMIT")
    return found, fast


def _holding(conn: sqlite3.Connection, token: str) -> int:
    (count,) = conn.execute(
        "SELECT count(*) FROM hits WHERE hits MATCH ?", (f'"{token}"',)
    ).fetchone()
    return count


def _foreign(path: Path, statement: str, params: tuple) -> None:
    """Another program's write: its own connection, its own commit."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.execute(statement, params)
    finally:
        conn.close()


NTH_ROWID = (
    "(SELECT rowid FROM hits ORDER BY rowid LIMIT 1 OFFSET ? % max(1, (SELECT count(*) FROM hits)))"
)


FOREIGN_INSERT = (
    "INSERT INTO hits (rowid, text) VALUES ((SELECT coalesce(max(rowid), 0) FROM hits) + 10000, ?)"
)


def _rebuild_in_place(home: Home, index: Index) -> Index:
    """A new file built from the same logs, its bytes written into the old file's inode, with no
    swap to clear the cache: what a reused inode looks like to a reader."""
    index.close()
    built = newindex.build(home, index.settings, index.mode, home.index_db)
    inode = os.stat(home.index_db).st_ino
    with open(built.path, "rb") as new, open(home.index_db, "r+b") as old:
        old.truncate(0)
        shutil.copyfileobj(new, old)
    os.unlink(built.path)
    assert os.stat(home.index_db).st_ino == inode
    reopened = Index(home)
    reopened.open()
    return reopened


def _apply(home: Home, index: Index, op: tuple) -> Index:
    kind = op[0]
    path = home.index_db
    if kind in ("append", "replace"):
        if kind == "replace":
            home.session_log(op[1]).unlink(missing_ok=True)
        _log(home.root, op[1], op[2])
        index.catch_up_session(op[1])
    elif kind == "reindex":
        for _ in range(op[1]):
            index.reindex()
    elif kind == "rebuilt in place":
        index = _rebuild_in_place(home, index)
    elif kind == "foreign update":
        _foreign(path, f"UPDATE hits SET text = ? WHERE rowid = {NTH_ROWID}", (op[2][0], op[1]))
    elif kind == "foreign delete":
        for n in range(op[2]):
            _foreign(path, f"DELETE FROM hits WHERE rowid = {NTH_ROWID}", (op[1] + n,))
    elif kind == "foreign insert":
        for text in op[1]:
            # Far above memoryd's rowids, which it numbers from its own sources table.
            _foreign(path, FOREIGN_INSERT, (text,))
    elif kind == "memoryd idle":
        index.catch_up_all()
    return index


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations, store_above=st.sampled_from([1, 3, 10**9]))
@pytest.mark.usefixtures("eager")
def test_every_recall_is_the_spec_query_through_swaps_and_foreign_writes(
    monkeypatch, ops, store_above
):
    """store_above: the rows from which a build keeps a term's count in the file."""
    monkeypatch.setattr(generation, "STORE_ABOVE", store_above)
    with tempfile.TemporaryDirectory() as tmp:
        home, index = _open(Path(tmp) / "home")
        try:
            _recall(index, "alpha Beta gamma", 3)  # counts cached before anything happens
            for op in ops:
                if op[0] == "recall":
                    found, fast = _recall(index, op[1], op[2])
                    spec = _spec(home.index_db, op[1], op[2])
                    assert found == spec, op
                    assert fast is None or fast == spec, op
                else:
                    index = _apply(home, index, op)
        finally:
            index.close()


def _raw_file(path: Path, texts: list[str]) -> None:
    """An index file as memoryd writes one: hits and the generation record of a new file."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("CREATE VIRTUAL TABLE hits USING fts5(text, tokenize = 'unicode61')")
        conn.execute(indexer.SCHEMA[1])  # sources, empty here: equal scores by rowid
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO hits (text) VALUES (?)", [(t,) for t in texts])
        generation.seal(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


TEMPLATES = ["alpha x", "alpha alpha", "x x", "beta x", "beta beta", "alpha beta"]


def _spread(counts: list[int]) -> list[str]:
    return [t for t, n in zip(TEMPLATES, counts, strict=True) for _ in range(n)] + ["pad"] * 300


@pytest.mark.usefixtures("eager")
def test_a_new_file_on_the_old_inode_with_the_old_figures_is_counted_afresh(tmp_path, monkeypatch):
    """Two files with the same rows, tokens and FTS5 structure record, whose terms are spread
    differently, the second written into the first one's inode: a key of inode and FTS5's figures
    would match, and the first file's counts would give another answer on the second."""
    path, other = tmp_path / "index.sqlite3", tmp_path / "other.sqlite3"
    _raw_file(path, _spread([0, 35, 0, 24, 4, 28]))
    _raw_file(other, _spread([2, 32, 8, 6, 11, 32]))
    terms, k = ["alpha", "x"], 5
    inode = os.stat(path).st_ino
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    assert topk.fast(conn, terms, k) in (None, _spec(path, "alpha x", k))
    before = generation.figures(conn)
    stats = vocab.generation(conn)
    first_counts = {term: vocab.docs(conn, stats, term, term) for term in terms}
    conn.execute("COMMIT")
    conn.close()

    with open(other, "rb") as new, open(path, "r+b") as old:
        old.truncate(0)
        shutil.copyfileobj(new, old)
    spec = _spec(path, "alpha x", k)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        assert os.stat(path).st_ino == inode
        assert generation.figures(conn) == before  # what an inode-and-figures key would match
        with monkeypatch.context() as stale:  # the first file's counts would be wrong here
            stale.setattr(vocab, "docs", lambda _c, _s, token, _t: first_counts[token])
            assert topk.fast(conn, terms, k) not in (None, spec)
        stats = vocab.generation(conn)
        assert stats.docs == {} and stats.carried == {}
        assert topk.fast(conn, terms, k) == spec
        conn.execute("COMMIT")
    finally:
        conn.close()


@pytest.mark.usefixtures("eager")
def test_two_reindexes_without_a_recall_between(tmp_path):
    """A recall, new rows, then two reindexes: the second new file is made after the first old
    one was removed, and may get its inode. Either way recall answers the spec's query, and a swap
    leaves no cached figure behind."""
    home, index = _open(tmp_path / "home")
    try:
        for attempt in range(6):
            assert _recall(index, "alpha gamma", 5)[0] == _spec(home.index_db, "alpha gamma", 5)
            inode = os.stat(home.index_db).st_ino
            _log(home.root, "s-three", [f"alpha gamma {attempt}", "alpha"] * (attempt + 1))
            index.catch_up_session("s-three")
            home.session_log("s-one").unlink()  # renumbers the rows the next build makes
            _log(home.root, "s-one", ["gamma gamma", "alpha zeta"] * (attempt + 2))
            index.reindex()
            assert vocab._stats == {}
            index.reindex()
            reused = os.stat(home.index_db).st_ino == inode
            found, fast = _recall(index, "alpha gamma", 5)
            assert found == _spec(home.index_db, "alpha gamma", 5), (attempt, reused)
            assert fast is None or fast == found
    finally:
        index.close()


FOREIGN = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    conn.execute("BEGIN IMMEDIATE")
    rows = [r for (r,) in conn.execute("SELECT rowid FROM hits ORDER BY rowid")]
    if "update" in sys.argv[2]:
        for rowid in rows[::3]:
            conn.execute("UPDATE hits SET text = 'zeta zeta kappa' WHERE rowid = ?", (rowid,))
    if "delete" in sys.argv[2]:
        for rowid in rows[1::5]:
            conn.execute("DELETE FROM hits WHERE rowid = ?", (rowid,))
    conn.execute("COMMIT")
    """
)


@pytest.mark.usefixtures("eager")
@pytest.mark.parametrize("foreign", ["update", "delete", "update and delete"])
@pytest.mark.parametrize("then", ["recall", "memoryd writes", "memoryd idle"])
def test_another_process_updating_and_deleting_in_place(tmp_path, foreign, then):
    """Another process rewrites a third of the rows in place, or deletes a fifth, or both: no
    count cached before is used after, whether memoryd commits in between or not."""
    home, index = _open(tmp_path / "home")
    queries = ["zeta alpha", "kappa Beta gamma", "alpha gamma", "eta theta zeta"]
    try:
        for query in queries:
            assert _recall(index, query, 4)[0] == _spec(home.index_db, query, 4)
        lineage, _ = _state(home.index_db)
        done = subprocess.run(
            [sys.executable, "-c", FOREIGN, str(home.index_db), foreign],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        if then == "memoryd writes":
            _log(home.root, "s-three", ["alpha kappa", "zeta"])
            index.catch_up_session("s-three")
        elif then == "memoryd idle":
            index.catch_up_all()
        for query in queries:
            found, fast = _recall(index, query, 4)  # also: every count used is this state's
            assert found == _spec(home.index_db, query, 4), query
            assert fast is None or fast == found
        after, own = _state(home.index_db)
        if then == "recall":  # memoryd has not written since: the state is not its own
            assert (after, own) == (lineage, False)
        else:  # memoryd's next transaction starts a new lineage
            assert after != lineage and own
    finally:
        index.close()


def _state(path: Path) -> tuple[str | None, bool]:
    """The lineage recorded, and whether the file is as memoryd's last commit left it."""
    conn = sqlite3.connect(path)
    try:
        record, figures = generation.current(conn)
        return (None, False) if record is None else (record.lineage, record.figures == figures)
    finally:
        conn.close()


def _record(path: Path) -> generation.Record:
    conn = sqlite3.connect(path)
    try:
        record = generation.read(conn)
        assert record is not None
        assert record.figures == generation.figures(conn)  # memoryd's own state
        return record
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("change", "same_lineage", "serial_step"),
    [
        ("rows added", True, 1),
        ("nothing new", True, 0),
        ("rows deleted", False, None),
        ("reindex", False, None),
        ("foreign write, then rows added", False, None),
    ],
)
def test_what_each_change_does_to_the_generation(tmp_path, change, same_lineage, serial_step):
    home, index = _open(tmp_path / "home")
    try:
        before = _record(home.index_db)
        if change == "rows added":
            _log(home.root, "s-two", ["kappa"])
            index.catch_up_session("s-two")
        elif change == "nothing new":
            index.catch_up_all()
        elif change == "rows deleted":
            home.session_log("s-one").unlink()
            _log(home.root, "s-one", ["kappa"])
            index.catch_up_session("s-one")
        elif change == "reindex":
            index.reindex()
        else:
            _foreign(home.index_db, FOREIGN_INSERT, ("kappa",))
            _log(home.root, "s-two", ["kappa"])
            index.catch_up_session("s-two")
        after = _record(home.index_db)
        assert (after.lineage == before.lineage) is same_lineage
        if serial_step is not None:
            assert after.serial == before.serial + serial_step
        else:
            assert after.serial == 0
    finally:
        index.close()


def _statements(conn: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    return seen


@pytest.mark.usefixtures("eager")
def test_a_build_keeps_the_common_terms_counts_for_its_lineage(tmp_path, monkeypatch):
    """After a reindex, recall counts no term the build kept (alpha, Beta and gamma, in at least
    6 rows), while rows are added; a deletion starts a new lineage, and the kept counts are no
    longer used."""
    monkeypatch.setattr(generation, "STORE_ABOVE", 6)
    home, index = _open(tmp_path / "home")
    try:
        index.reindex()
        conn = sqlite3.connect(home.index_db)
        kept = generation.stored_counts(conn, generation.read(conn).lineage)
        conn.close()
        assert kept is not None and set(kept[2]) == {"alpha", "beta", "gamma"}
        for step in ("built", "rows added", "rows deleted"):
            if step == "rows added":
                _log(home.root, "s-three", ["alpha Beta", "Beta kappa"])
                index.catch_up_session("s-three")
            elif step == "rows deleted":
                home.session_log("s-one").unlink()
                _log(home.root, "s-one", ["alpha gamma"])
                index.catch_up_session("s-one")
            query = "alpha Beta zeta"
            with index.reader() as reader:
                seen = _statements(reader)
                reader.execute("BEGIN")
                found = topk.best_rowids(reader, query_terms(query), match_expression(query), 3)
                for token, count in vocab.generation(reader).docs.items():
                    assert count == _holding(reader, token), (step, token)
                reader.execute("COMMIT")
                reader.set_trace_callback(None)
            counted = {s.split("'")[1] for s in seen if s.startswith(vocab.VOCAB_DOCS[:30])}
            assert found == _spec(home.index_db, query, 3), step
            if step == "rows deleted":
                assert {"alpha", "beta"} <= counted, counted
            else:
                assert counted == {"zeta"}, (step, counted)
            vocab.forget()  # each step's recall starts from what the file holds
    finally:
        index.close()
