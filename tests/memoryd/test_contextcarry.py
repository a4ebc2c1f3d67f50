"""context's term counts carried from one state of its table to the next (contextrank.py,
contextcarry.py): after commits that only added turns, which rewrite the neighbour column of each
session's last turns, every count is the rows holding the token now and the ranking is FTS5's
own; past a deletion, or too many rows rewritten, the counts are taken afresh."""

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import context, contextcarry, contextrank
from tests.memoryd.test_contextrank import _both, eager  # noqa: F401  (the fixture)
from tests.memoryd.test_scheduling import _log
from tests.memoryd.test_topk import SKEWED, WORDS

# Words whose porter stem is the word itself: a query's spelling is its token.
SESSIONS = ["s-one", "s-two", "s-three"]
texts = st.lists(
    st.lists(st.sampled_from(SKEWED), min_size=1, max_size=6).map(" ".join), min_size=1, max_size=4
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from(SESSIONS), texts),
        st.tuples(st.just("replace"), st.sampled_from(SESSIONS[:2]), texts),
        st.tuples(
            st.just("query"),
            st.lists(st.sampled_from([w.lower() for w in WORDS]), min_size=1, max_size=4),
            st.integers(1, 6),
        ),
    ),
    min_size=1,
    max_size=25,
)


def _home(root: Path) -> tuple[Home, Index, sqlite3.Connection]:
    _log(root, "s-one", ["alpha Beta gamma", "alpha alpha", "delta eps"])
    _log(root, "s-two", ["Beta gamma", "zeta eta theta"])
    home = Home(root)
    index = Index(home, mode="context")
    index.open()
    index.catch_up_all()
    return home, index, sqlite3.connect(home.index_db, isolation_level=None)


def _apply(home: Home, index: Index, op: tuple) -> None:
    kind, session, new = op
    if kind == "replace":  # a log written anew: the indexer deletes its rows, then adds
        home.session_log(session).unlink(missing_ok=True)
    _log(home.root, session, new)
    index.catch_up_session(session)


def _holding(conn: sqlite3.Connection, token: str) -> int:
    query = "SELECT count(*) FROM context_hits WHERE context_hits MATCH ?"
    return conn.execute(query, (f'"{token}"',)).fetchone()[0]


def _known(conn: sqlite3.Connection) -> dict[str, int]:
    conn.execute("BEGIN")
    try:
        return dict(contextrank.counts(conn).known)
    finally:
        conn.execute("COMMIT")


def _statements(conn: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    return seen


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
@pytest.mark.usefixtures("eager")
def test_every_count_and_answer_is_the_tables_own_through_additions_and_deletions(ops):
    with tempfile.TemporaryDirectory() as tmp:
        home, index, conn = _home(Path(tmp) / "home")
        try:
            for op in ops:
                if op[0] != "query":
                    _apply(home, index, op)
                    continue
                plain, fast = _both(conn, op[1], op[2])
                assert fast is None or fast == plain, op
                for token, count in _known(conn).items():
                    assert count == _holding(conn, token), (op, token)
        finally:
            conn.close()
            index.close()


@pytest.mark.usefixtures("eager")
def test_the_turns_rewritten_by_an_addition_carry_what_they_gained(tmp_path):
    home, index, conn = _home(tmp_path / "home")
    try:
        _both(conn, ["kappa", "gamma"], 3)  # counted in this state: kappa in no row
        assert _known(conn)["kappa"] == 0
        seen = _statements(conn)
        # s-one's last two turns gain kappa in their neighbour column, the new turn holds it.
        _apply(home, index, ("append", "s-one", ["kappa now"]))
        plain, fast = _both(conn, ["kappa", "gamma"], 3)
        assert fast == plain
        known = _known(conn)
        assert known["kappa"] == _holding(conn, "kappa") == 3
        assert known["gamma"] == _holding(conn, "gamma")
        assert not [s for s in seen if s.startswith(contextrank.VOCAB_DOCS[:30])]
        carried = [s for s in seen if "MATCH" in s and "rowid > " in s]
        assert len(carried) == 2  # kappa and gamma: a seek to the new rows each
    finally:
        conn.close()
        index.close()


@pytest.mark.parametrize(
    "change",
    ["rows deleted", "too many rows rewritten"],
)
@pytest.mark.usefixtures("eager")
def test_the_counts_are_taken_afresh(tmp_path, monkeypatch, change):
    home, index, conn = _home(tmp_path / "home")
    try:
        _both(conn, ["kappa", "gamma"], 3)
        seen = _statements(conn)
        if change == "rows deleted":
            _apply(home, index, ("replace", "s-one", ["kappa gamma"]))
        else:
            monkeypatch.setattr(contextcarry, "MOST_REWRITTEN", 1)
            _apply(home, index, ("append", "s-one", ["kappa now"]))
        plain, fast = _both(conn, ["kappa", "gamma"], 3)
        assert fast == plain
        known = _known(conn)
        for token in ("kappa", "gamma"):
            assert known[token] == _holding(conn, token)
        counted = {s.split("'")[1] for s in seen if s.startswith(contextrank.VOCAB_DOCS[:30])}
        assert counted == {"kappa", "gamma"}
    finally:
        conn.close()
        index.close()


def test_a_row_rebuilt_as_it_was_is_the_row_context_wrote_then(tmp_path):
    """contextcarry rebuilds the rows below `since` as context.py wrote them in that state: with
    nothing added since, no row gained anything."""
    home, index, conn = _home(tmp_path / "home")
    try:
        (last,) = conn.execute("SELECT max(rowid) FROM context_hits").fetchone()
        assert contextcarry.gained(conn, last) == {}
        _apply(home, index, ("append", "s-two", ["iota kappa"]))
        gained = contextcarry.gained(conn, last)
        # s-two's two turns gained the new turn's words; its date words they held already.
        assert gained == {"iota": 2, "kappa": 2}
        assert context.NEIGHBOURS == 2
    finally:
        conn.close()
        index.close()
