"""Term counts carried from one index generation to the next (vocab.py): after a commit that only
added rows, a count is the earlier one plus the new rows holding the term; after any deletion it
is counted afresh. Either way the exact top-k answers as the plain query does."""

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.search import vocab
from tests.memoryd.test_scheduling import _log
from tests.memoryd.test_topk import SKEWED, WORDS, _both, eager  # noqa: F401  (the fixture)

texts = st.lists(
    st.lists(st.sampled_from(SKEWED), min_size=1, max_size=8).map(" ".join), min_size=1, max_size=6
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from(["s-one", "s-two", "s-three"]), texts),
        st.tuples(st.just("replace"), st.sampled_from(["s-one", "s-two"]), texts),
        st.tuples(
            st.just("query"),
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
            st.integers(1, 6),
        ),
    ),
    min_size=1,
    max_size=25,
)


def _home(root: Path) -> tuple[Home, Index, sqlite3.Connection]:
    _log(root, "s-one", ["alpha Beta gamma", "alpha alpha", "delta eps"] * 3)
    _log(root, "s-two", ["Beta gamma", "zeta eta theta", "alpha"] * 3)
    home = Home(root)
    index = Index(home)
    index.open()
    index.catch_up_all()
    return home, index, sqlite3.connect(home.index_db, isolation_level=None)


def _apply(home: Home, index: Index, op: tuple) -> None:
    kind, session, new = op
    if kind == "replace":  # a log written anew: the indexer deletes its rows, then adds
        home.session_log(session).unlink(missing_ok=True)
    _log(home.root, session, new)
    index.catch_up_session(session)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
@pytest.mark.usefixtures("eager")
def test_answers_stay_the_plain_answers_through_additions_and_deletions(ops):
    with tempfile.TemporaryDirectory() as tmp:
        home, index, conn = _home(Path(tmp) / "home")
        try:
            for op in ops:
                if op[0] == "query":
                    plain, fast = _both(conn, op[1], op[2])
                    assert fast is None or fast == plain, op
                else:
                    _apply(home, index, op)
        finally:
            conn.close()
            index.close()


def _statements(conn: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    return seen


def _count_now(conn: sqlite3.Connection, term: str) -> int:
    return conn.execute("SELECT count(*) FROM hits WHERE hits MATCH ?", (f'"{term}"',)).fetchone()[
        0
    ]


@pytest.mark.usefixtures("eager")
def test_an_addition_carries_the_counts_and_a_deletion_counts_afresh(tmp_path):
    home, index, conn = _home(tmp_path / "home")
    try:
        _both(conn, "alpha gamma", 3)  # counts alpha and gamma for this generation
        seen = _statements(conn)

        _apply(home, index, ("append", "s-three", ["alpha kappa", "alpha"]))
        plain, fast = _both(conn, "alpha gamma", 3)
        assert fast == plain
        carried = [s for s in seen if "rowid > " in s and "MATCH" in s]
        assert len(carried) == 2  # alpha and gamma: the new rows only
        assert not [s for s in seen if s.startswith(vocab.VOCAB_DOCS[:30])]
        stats = vocab.generation(conn)
        assert stats.docs["alpha"] == _count_now(conn, "alpha")

        seen.clear()
        _apply(home, index, ("replace", "s-one", ["gamma only now"]))
        conn.execute("BEGIN")
        try:
            stats = vocab.generation(conn)
            assert stats.carried == {}  # a deletion: nothing carried over it
            alpha = vocab.docs(conn, stats, "alpha", "alpha")
        finally:
            conn.execute("COMMIT")
        assert alpha == _count_now(conn, "alpha")
        assert not [s for s in seen if "rowid > " in s and "MATCH" in s]
        plain, fast = _both(conn, "alpha gamma", 3)
        assert fast is None or fast == plain
    finally:
        conn.close()
        index.close()


@pytest.mark.usefixtures("eager")
def test_a_deletion_by_another_writer_is_seen_by_the_row_count(tmp_path):
    """A writer other than memoryd's indexer leaves FTS5's figures unlike the ones memoryd's last
    commit recorded: nothing is carried, and the counts are taken afresh."""
    home, index, conn = _home(tmp_path / "home")
    try:
        _both(conn, "alpha", 3)
        assert "alpha" in vocab.generation(conn).docs
        other = sqlite3.connect(home.index_db, isolation_level=None)
        other.execute("DELETE FROM hits WHERE rowid IN (SELECT rowid FROM hits LIMIT 2)")
        other.execute("INSERT INTO hits (rowid, text) VALUES (1000, 'alpha alpha')")
        other.execute(  # its sources row too: the reference orders equal scores by it
            "INSERT INTO sources VALUES (1000, 'session', 'other', 0, 0,"
            " '2026-09-20T14:02:11Z', 'user', 'private', 0)"
        )
        other.close()
        conn.execute("BEGIN")
        try:
            assert vocab.generation(conn).carried == {}  # not memoryd's own state
        finally:
            conn.execute("COMMIT")
        plain, fast = _both(conn, "alpha", 3)
        assert fast is None or fast == plain
    finally:
        conn.close()
        index.close()
