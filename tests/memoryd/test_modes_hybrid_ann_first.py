"""Recall mode hybrid over ann.ANN_AT vectors or more, before its vector search index (the ANN)
is built: the build starts as the index opens, and again after a reindex, without waiting for a
recall; meanwhile the exact matrix searches the newest ANN_AT rows (not the first ones, which left
what was said lately to its words alone), letting the oldest go as new rows get their vectors, and
`bxctl memory stats` says that the vector search is being built."""

import json
import time

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("faiss")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import ann, hybrid, progress  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_modes_hybrid_scale import (  # noqa: E402
    clustered,
    conversation,
    opened,
    small_ann,  # noqa: F401 - a fixture
    unit,
    write_vectors,
)
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402

PUPPY = "We adopted a puppy from the shelter last week, a beagle mix"


def _never_built(monkeypatch) -> None:
    """The ANN's build never succeeds (too few vectors to train on): the matrix answers."""
    monkeypatch.setattr(ann, "TRAIN_MIN", 10**9)


def _until(check, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_the_matrix_holds_the_newest_rows_until_the_ann_is_built(
    tmp_path,
    monkeypatch,
    small_ann,  # noqa: F811
):
    _never_built(monkeypatch)
    home = Home(tmp_path / "h")
    for session, records in conversation(5, 100).items():
        append(home, session, records)
    index = opened(home, monkeypatch)
    try:
        index.catch_up_all()
        found = clustered(500, seed=7)
        rowids = write_vectors(index, found)
        newest = found[-1]
        with index.reader() as conn:
            snap, vector = index.live.matrix.near(conn, lambda: newest)
        assert vector is newest
        assert snap.rowids.tolist() == rowids[-ann.ANN_AT :]
        scores = hybrid.dense_scores(snap, newest)
        assert int(snap.rowids[int(np.argmax(scores))]) == rowids[-1]
        # Rows written later take the place of the oldest.
        append(home, "mm-new", [user("2023-06-01T10:00:00Z", f"new {n}") for n in range(30)])
        index.catch_up_all()
        later = write_vectors(index, unit(np.random.default_rng(8), 30))
        with index.reader() as conn:
            snap, _ = index.live.matrix.near(conn, lambda: newest)
        assert snap.rowids.tolist() == [*rowids, *later][-ann.ANN_AT :]
        assert len(snap.neighbours) == ann.ANN_AT
        # Stats says what the vector search covers meanwhile.
        assert _until(lambda: (progress.embedding(home.index_db) or {}).get("searched"))
        shown = progress.embedding(home.index_db)
        assert shown["searched"] == ann.ANN_AT
        assert progress.line(shown) == (
            "embedding (recall mode hybrid): all 530 records have their vector; vector search"
            " index being built: until it is, the newest 400 of the 530 records with a vector"
            " are searched by meaning, the others by their words"
        )
    finally:
        index.close()


def test_the_ann_is_built_at_open_and_after_a_reindex_without_a_recall(
    tmp_path,
    monkeypatch,
    small_ann,  # noqa: F811
):
    home = Home(tmp_path / "h")
    for session, records in conversation(5, 100).items():
        append(home, session, records)
    index = opened(home, monkeypatch)
    try:
        index.catch_up_all()
        write_vectors(index, clustered(500, seed=9))
        matrix = index.live.matrix
        assert _until(matrix.ann.ready), "the ANN waited for a recall"
        assert matrix.ann.rows() == 500
        assert progress.embedding(home.index_db)["searched"] is None  # built: no word of it
        index.reindex()  # the vectors carried over: the ANN is built again, no recall asked
        assert _until(lambda: matrix.ann.ready() and matrix.ann.rows() == 500)
    finally:
        index.close()
    # Opened again over the same file: built again, no recall asked.
    index = opened(home, monkeypatch)
    try:
        assert _until(index.live.matrix.ann.ready), "the ANN waited for a recall after a start"
    finally:
        index.close()


def test_a_recall_finds_the_newest_row_by_meaning_before_the_ann_is_built(
    tmp_path,
    monkeypatch,
    small_ann,  # noqa: F811
):
    """The real model, the row asked for in other words than it holds."""
    _never_built(monkeypatch)
    home = Home(tmp_path / "h")
    log = home.session_log("mm-old")
    log.parent.mkdir(parents=True, mode=0o700)
    words = "heron mill pond ledger kettle orchard lantern harbour violin quarry meadow cobalt"
    words_ = words.split()
    lines = [
        {
            "type": "user",
            "time": "2023-05-01T10:00:00Z",
            "content": f"turn {i} about the {words_[i % 12]} number {i * 7}",
        }
        for i in range(450)
    ]
    lines.append({"type": "user", "time": "2023-06-01T10:00:00Z", "content": PUPPY})
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    index = Index(home, mode="hybrid")
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120), "embedding did not finish"
        assert not index.live.matrix.ann_ready()
        hits = recall_on(index, "rescue dog", k=3, session="mm-q").hits
        assert any(PUPPY in (hit.snippet or "") for hit in hits)
    finally:
        index.close()
