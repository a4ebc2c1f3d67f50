"""Recall mode hybrid after rows are deleted (a forget, a rewritten log): no recall scores with
their vectors, nor counts them as a neighbour's, from the next recall on: the exact matrix is the
one a restart loads, whichever row went, and the ANN's pool is read from the table."""

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("faiss")

from memoryd.data import purge  # noqa: E402
from memoryd.home import Home  # noqa: E402
from memoryd.modes import hybrid  # noqa: E402
from memoryd.modes import vectors as vec  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_modes_hybrid_scale import (  # noqa: E402
    clustered,
    conversation,
    exact_scores,
    opened,
    small_ann,  # noqa: F401 - a fixture
    wait_ready,
    write_vectors,
)
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402

SESSIONS, TURNS = 3, 12


def written(tmp_path, monkeypatch):
    """A hybrid index of SESSIONS sessions (one after another) with a vector for each turn,
    its matrix loaded; appends wait an hour, so only a delete can change it meanwhile."""
    monkeypatch.setattr(vec, "REFRESH_INTERVAL", 3600.0)
    home = Home(tmp_path / "h")
    for session, records in conversation(SESSIONS, TURNS).items():
        append(home, session, records)
    index = opened(home, monkeypatch)
    index.catch_up_all()
    found = clustered(SESSIONS * TURNS, seed=3)
    vectors = dict(zip(write_vectors(index, found), found, strict=True))
    with index.reader() as conn:
        assert len(index.live.matrix.refresh(conn).rowids) == SESSIONS * TURNS
    return home, index, vectors


def same_matrix(index) -> None:
    """The live matrix is the one a fresh load (a restart) gives."""
    with index.reader() as conn:
        live = index.live.matrix.refresh(conn)
        fresh = vec.Matrix().refresh(conn)
    assert live.rowids.tolist() == fresh.rowids.tolist()
    assert np.array_equal(live.vectors, fresh.vectors)
    assert np.array_equal(live.neighbours, fresh.neighbours)


# Keys forgotten at once: a turn, two neighbours, turns of two sessions, the last turn of the
# last session (the highest rowid).
KEY_CASES = [
    ["session:mm-s1:5"],
    ["session:mm-s1:5", "session:mm-s1:6"],
    ["session:mm-s0:0", "session:mm-s2:7"],
    [f"session:mm-s2:{TURNS - 1}"],
]


@pytest.mark.parametrize("keys", KEY_CASES)
def test_after_a_forget_the_matrix_is_the_one_a_restart_loads(tmp_path, monkeypatch, keys):
    home, index, found = written(tmp_path, monkeypatch)
    try:
        with index.reader() as conn:
            rowids = {key: purge.rows_of(conn, key) for key in keys}
        purge.purge(index, keys)
        same_matrix(index)
        with index.reader() as conn:
            left = index.live.matrix.refresh(conn)
        gone = {r for rs in rowids.values() for r in rs}
        assert not gone & set(left.rowids.tolist())
        for r in gone:  # the forgotten turn's own vector raises no row
            scores = hybrid.dense_scores(left, found[r]).tolist()
            assert scores == pytest.approx(list(exact_scores(index, found[r]).values()), abs=1e-5)
    finally:
        index.close()


def test_a_rewritten_log_leaves_the_matrix_at_once(tmp_path, monkeypatch):
    home, index, _ = written(tmp_path, monkeypatch)
    try:
        home.session_log("mm-s1").write_text("")
        append(home, "mm-s1", [user("2023-06-01T10:00:00Z", "the garden needs watering")])
        index.catch_up_all()
        same_matrix(index)
    finally:
        index.close()


def test_recall_after_a_forget_answers_as_after_a_restart(tmp_path, monkeypatch):
    home, index, _ = written(tmp_path, monkeypatch)
    question = "s1 turn 6"
    try:
        recall_on(index, question, k=8, session="mm-q")  # the matrix as it was, in use
        purge.purge(index, ["session:mm-s1:5"])
        live = recall_on(index, question, k=8, session="mm-q").text
    finally:
        index.close()
    index = opened(home, monkeypatch)
    try:
        assert recall_on(index, question, k=8, session="mm-q").text == live
    finally:
        index.close()


def test_the_ann_never_scores_a_forgotten_row(tmp_path, monkeypatch, small_ann):  # noqa: F811
    home = Home(tmp_path / "h")
    for session, records in conversation(5, 100).items():
        append(home, session, records)
    index = opened(home, monkeypatch)
    try:
        index.catch_up_all()
        found = clustered(500, seed=5)
        rowids = write_vectors(index, found)
        wait_ready(index, 500)
        forgotten = rowids[150]  # mm-s1's turn 50: neither end of a session nor the highest
        purge.purge(index, ["session:mm-s1:50"])
        for at in (150, 149, 151):  # its own vector, and its neighbours' (in their pools)
            query = found[at]
            with index.reader() as conn:
                snap, _ = index.live.matrix.near(conn, lambda q=query: q)
            assert forgotten not in snap.rowids.tolist()
            scores = hybrid.dense_scores(snap, query).tolist()
            got = dict(zip(snap.rowids.tolist(), scores, strict=True))
            exact = exact_scores(index, query)
            for r, score in got.items():  # never more than the table's rows give it
                assert score <= exact[r] + 1e-3
            if at != 150:  # its neighbours' neighbours: the turns now on either side
                assert got[rowids[at]] == pytest.approx(exact[rowids[at]], abs=1e-3)
    finally:
        index.close()
