"""The hybrid mode's ANN after a reindex (or an upgrade's rebuild) mid-pass: the vectors carried
over lie above the rows still pending, so every batch the embedder writes lies below them and
raises recall_mode.generation. The ANN adds those rows, told by the embedder which they are,
rather than reading and encoding the whole table again after every batch; a raise it was not
told of (a delete that took the highest rowid) still builds it anew."""

import sqlite3

import numpy as np
import pytest

pytest.importorskip("faiss")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import ann as ann_module  # noqa: E402
from memoryd.modes import hybrid_tables  # noqa: E402
from memoryd.modes.embed import DIMENSIONS  # noqa: E402
from memoryd.modes.int8 import pack  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402

ROWS = 1_400
CARRIED_LOW = 1_200  # rows 1..1,200 have their vector, and the CARRIED_HIGH highest rows
CARRIED_HIGH = 30


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMENSIONS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _carried(path, rng: np.random.Generator) -> None:
    """Vectors for the lowest and the highest rows, the rows between still pending: the state a
    reindex mid-pass leaves (the notes, embedded first, are the rebuilt file's highest rows)."""
    conn = sqlite3.connect(path)
    try:
        (top,) = conn.execute("SELECT max(rowid) FROM vector_pending").fetchone()
        rowids = [*range(1, CARRIED_LOW + 1), *range(top - CARRIED_HIGH + 1, top + 1)]
        with conn:
            for rowid, vector in zip(rowids, _unit(rng, len(rowids)), strict=True):
                conn.execute("DELETE FROM vector_pending WHERE rowid = ?", (rowid,))
                conn.execute("INSERT INTO vectors VALUES (?, ?)", (rowid, pack(vector)))
    finally:
        conn.close()


def _table(path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [r for (r,) in conn.execute("SELECT rowid FROM vectors ORDER BY rowid")]
    finally:
        conn.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_batches_written_below_carried_vectors_are_added_not_built_for(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    # This test runs the ANN's steps itself (no thread of its own), from 1,000 vectors on.
    monkeypatch.setattr(ann_module.Ann, "start", lambda self: None)
    monkeypatch.setattr(ann_module, "ANN_AT", 1_000)
    home = Home(tmp_path / "h")
    turns = [user(f"2023-05-01T10:{n // 60:02d}:{n % 60:02d}Z", f"turn {n}") for n in range(ROWS)]
    append(home, "mm-long", turns)
    index = Index(home, mode="hybrid")
    index.open()
    try:
        live = index.live
        live.stop_embedder()  # this test runs the steps, and the ANN's
        index.catch_up_all()
        _carried(home.index_db, rng)
        live.worker.embed = lambda texts: _unit(rng, len(texts))
        ann = live.matrix.ann
        builds: list[int] = []
        build = ann._build

        def counted(*args):
            builds.append(1)
            return build(*args)

        ann._build = counted
        ann.keep()
        assert len(builds) == 1 and ann.rows() == CARRIED_LOW + CARRIED_HIGH
        batches = 0
        while live.step():
            batches += 1
            ann.keep()
        assert batches > 3
        held = _table(home.index_db)
        assert len(held) == ROWS
        assert len(builds) == 1  # every batch added, none built for
        assert ann.rows() == ROWS
        found = ann.search(_unit(rng, 1)[0], 2 * ROWS)  # more than it holds: every row
        assert sorted(found) == held
        # A raise nobody told of (a delete took the highest rowid: a rowid may be another row's
        # now) builds it anew.
        conn = sqlite3.connect(home.index_db)
        with conn:
            conn.execute(hybrid_tables.RAISE_GENERATION)
        conn.close()
        ann.keep()
        assert len(builds) == 2 and sorted(ann.search(_unit(rng, 1)[0], 2 * ROWS)) == held
    finally:
        index.close()
