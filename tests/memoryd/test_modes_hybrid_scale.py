"""Recall mode hybrid at scale: int8 vectors keep cosines, the embedding child gives the model's
vectors and never outlives memoryd, the ANN (faiss IVF-PQ) takes over from the exact matrix and
its candidates are scored as the exact matrix scores them, deletes and rowid reuse are followed,
and stats shows the embedding's progress."""

import contextlib
import datetime as dt
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("faiss")

import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import ann, embed, embedworker, hybrid, hybrid_tables, int8, progress  # noqa: E402
from memoryd.modes import vectors as vec  # noqa: E402
from memoryd.owner import stats  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, embed.DIMENSIONS)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.01, 100.0))
def test_int8_keeps_every_cosine_within_a_hundredth(seed, scale):
    rng = np.random.default_rng(seed)
    a, b = unit(rng, 2)
    a = a * scale  # the scale is not stored: a cosine does not need it
    stored = int8.unpack([int8.pack(a), int8.pack(b)])
    assert len(int8.pack(a)) == embed.DIMENSIONS
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)
    expected = float(a @ b) / scale
    assert abs(float(stored[0] @ stored[1]) - expected) < 0.01
    assert np.array_equal(int8.quantise(np.stack([a, b]))[1], np.frombuffer(int8.pack(b), np.int8))


def test_vectors_written_as_float32_by_an_older_memoryd_are_read():
    v = unit(np.random.default_rng(1), 1)[0]
    assert np.allclose(int8.unpack([v.astype("<f4").tobytes()])[0], v, atol=1e-6)


# --- the embedding child --------------------------------------------------------------------------
TEXTS = ["We adopted a puppy", "The launch window moved to Thursday", "", "word " * 400]


def test_the_child_gives_the_vectors_of_the_model_in_this_process():
    worker = embedworker.Worker(threads=2)
    try:
        found = worker.embed(TEXTS)
        child = worker.pid
        assert child is not None and child != os.getpid()
    finally:
        worker.close()
    here = embed.shared().embed(TEXTS)
    assert found.shape == here.shape
    assert float((found * here).sum(axis=1).min()) > 0.999
    assert _gone(child)


def _gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/status") as f:
                if "State:\tZ" in f.read():
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def test_a_child_that_died_is_started_again_at_the_next_batch():
    worker = embedworker.Worker(threads=1)
    try:
        worker.embed(["first"])
        first = worker.pid
        os.kill(first, signal.SIGKILL)
        assert _gone(first)
        again = worker.embed(["second"])
        assert again.shape == (1, embed.DIMENSIONS)
        assert worker.pid not in (None, first)
    finally:
        worker.close()


def test_the_child_ends_when_memoryd_is_killed(tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        from memoryd.modes.embedworker import Worker
        w = Worker(threads=1)
        w.embed(["hello"])
        print(w.pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert not _gone(child, 0.5)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _gone(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        parent.stdout.close()


# --- the ANN --------------------------------------------------------------------------------------
@pytest.fixture
def small_ann(monkeypatch):
    """The ANN from 400 vectors on, trained on as few."""
    monkeypatch.setattr(ann, "TRAIN_MIN", 300)
    monkeypatch.setattr(ann, "ANN_AT", 400)
    monkeypatch.setattr(vec, "CANDIDATES", 100)  # of 800 rows: the codes must rank them
    monkeypatch.setattr(ann, "POLL", 0.05)
    monkeypatch.setattr(ann, "CHUNK", 150)
    monkeypatch.setattr(vec, "REFRESH_INTERVAL", 0.0)


def clustered(n: int, seed: int = 0, spread: float = 0.05) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = unit(rng, 20)
    x = centres[rng.integers(0, 20, n)] + spread * rng.standard_normal((n, embed.DIMENSIONS))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def conversation(sessions: int, turns: int) -> dict[str, list]:
    return {
        f"mm-s{s}": [
            user(f"2023-05-{1 + s % 28:02d}T10:{t // 60:02d}:{t % 60:02d}Z", f"s{s} turn {t}")
            for t in range(turns)
        ]
        for s in range(sessions)
    }


def opened(home: Home, monkeypatch) -> Index:
    monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)  # the test writes the vectors
    index = Index(home, mode="hybrid")
    index.open()
    return index


def write_vectors(index: Index, found: np.ndarray) -> list[int]:
    conn = index._write()
    rowids = [r for (r,) in conn.execute("SELECT rowid FROM vector_pending ORDER BY rowid")]
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
        [(r, int8.pack(found[i])) for i, r in enumerate(rowids)],
    )
    conn.execute("DELETE FROM vector_pending")
    conn.execute("COMMIT")
    return rowids


def wait_ready(index: Index, rows: int | None = None, timeout: float = 120.0) -> None:
    a = index.live.matrix.ann
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with index.reader() as conn:
            index.live.matrix.refresh(conn)  # what a recall does first: starts the ANN at ANN_AT
        if a.ready() and (rows is None or a.rows() == rows):
            if a.generation() == _generation(index.home):
                return
        time.sleep(0.05)
    raise AssertionError("the ANN was not built in time")


def exact_scores(index: Index, query: np.ndarray) -> dict[int, float]:
    """hybrid.dense_scores over the whole table, as the exact matrix computes them."""
    with index.reader() as conn:
        rows = conn.execute(
            "SELECT v.rowid, s.kind, s.session, v.vector FROM vectors v"
            " JOIN sources s ON s.rowid = v.rowid ORDER BY v.rowid"
        ).fetchall()
    groups = [r[2] if r[1] == "session" else f"#{r[0]}" for r in rows]
    full = vec.Snapshot(
        np.array([r[0] for r in rows]), int8.unpack([r[3] for r in rows]), vec.neighbours(groups)
    )
    return dict(zip(full.rowids.tolist(), hybrid.dense_scores(full, query).tolist(), strict=True))


@pytest.mark.parametrize("interleaved", [False, True])
def test_the_ann_takes_over_and_scores_its_pool_as_the_exact_matrix_does(
    tmp_path, monkeypatch, interleaved
):
    """Sessions one after another (each a run of rowids), or written in turns (each row's
    neighbours lie beyond the rows read around it, and are asked for one by one)."""
    monkeypatch.setattr(ann, "ANN_AT", 400)
    monkeypatch.setattr(ann, "TRAIN_MIN", 300)
    monkeypatch.setattr(ann, "POLL", 0.05)
    home = Home(tmp_path / "h")
    records = conversation(6, 100)
    index = opened(home, monkeypatch)
    try:
        if interleaved:
            for turn in range(0, 100, 5):
                for session, rs in records.items():
                    append(home, session, rs[turn : turn + 5])
                index.catch_up_all()
        else:
            for session, rs in records.items():
                append(home, session, rs)
            index.catch_up_all()
        found = clustered(600)
        rowids = write_vectors(index, found)
        wait_ready(index, 600)
        for q in found[::97]:
            exact = exact_scores(index, q)
            with index.reader() as conn:
                snap, vector = index.live.matrix.near(conn, lambda q=q: q)
            assert vector is q
            got = dict(
                zip(snap.rowids.tolist(), hybrid.dense_scores(snap, q).tolist(), strict=True)
            )
            stored = int8.unpack([int8.pack(v) for v in found]) @ q
            cosine = dict(zip(rowids, stored.tolist(), strict=True))
            # Well inside the pool (its edge is a near tie on these clusters), a row's
            # neighbours are all there: its score is the exact matrix's.
            pool = sorted(cosine, key=lambda r: -cosine[r])[: vec.POOL // 2]
            for r in pool:
                assert got[r] == pytest.approx(exact[r], abs=1e-3)
            # Any other row is scored with fewer neighbours, never more.
            for r, score in got.items():
                assert score <= exact[r] + 1e-3
    finally:
        index.close()


def test_the_ann_finds_nearly_all_of_the_exact_top_10(tmp_path, monkeypatch, small_ann):
    found = clustered(800, seed=3, spread=0.1)
    with ann_over(tmp_path, monkeypatch, 8, found) as (index, written):
        rowids = np.array(written)
        queries = clustered(40, seed=4, spread=0.1)
        share = []
        for q in queries:
            exact = set(rowids[np.argsort(-(found @ q))[:10]].tolist())
            with index.reader() as conn:
                snap, _ = index.live.matrix.near(conn, lambda q=q: q)
            top = set(snap.rowids[np.argsort(-(snap.vectors @ q))[:10]].tolist())
            share.append(len(top & exact) / 10)
        assert np.mean(share) >= 0.95


@contextlib.contextmanager
def ann_over(tmp_path, monkeypatch, sessions: int, found: np.ndarray):
    """(index, rowids): sessions of 100 turns indexed in mode hybrid, found written as their
    vectors, and the ANN built over them; the index closed after."""
    home = Home(tmp_path / "h")
    for session, records in conversation(sessions, 100).items():
        append(home, session, records)
    index = opened(home, monkeypatch)
    try:
        index.catch_up_all()
        rowids = write_vectors(index, found)
        wait_ready(index, len(found))
        yield index, rowids
    finally:
        index.close()


def test_the_ann_follows_new_vectors_deletes_and_reused_rowids(tmp_path, monkeypatch, small_ann):
    home = Home(tmp_path / "h")
    records = conversation(5, 100)
    for session, rs in records.items():
        append(home, session, rs)
    index = opened(home, monkeypatch)
    try:
        index.catch_up_all()
        write_vectors(index, clustered(500, seed=5))
        wait_ready(index, 500)
        # New rows: added to the ANN as they get their vectors.
        append(home, "mm-new", [user("2023-06-01T10:00:00Z", f"new {n}") for n in range(50)])
        index.catch_up_all()
        fresh = unit(np.random.default_rng(6), 50)
        new_rowids = write_vectors(index, fresh)
        wait_ready(index, 550)
        with index.reader() as conn:
            snap, _ = index.live.matrix.near(conn, lambda: fresh[7])
        assert new_rowids[7] in snap.rowids.tolist()
        # The newest log rewritten: its rows go (the highest rowids), new rows take them again
        # with other vectors; the ANN is built again and never answers with the old ones.
        generation = _generation(home)
        home.session_log("mm-new").write_text("")
        append(home, "mm-new", [user("2023-06-02T10:00:00Z", f"other {n}") for n in range(50)])
        index.catch_up_all()
        assert _generation(home) == generation + 1
        other = unit(np.random.default_rng(7), 50)
        reused = write_vectors(index, other)
        assert set(reused) & set(new_rowids)
        wait_ready(index, 550)
        for i in range(0, 50, 10):
            with index.reader() as conn:
                snap, _ = index.live.matrix.near(conn, lambda i=i: other[i])
            best = snap.rowids[np.argmax(snap.vectors @ other[i])]
            assert best == reused[i]
        # Rows deleted elsewhere (not the highest): no new generation, and never a candidate.
        generation = _generation(home)
        home.session_log("mm-s0").write_text("")
        index.catch_up_all()
        assert _generation(home) == generation
        with index.reader() as conn:
            gone = {r for (r,) in conn.execute("SELECT rowid FROM sources WHERE session='mm-s0'")}
            assert not gone
            for q in clustered(20, seed=5):
                snap, _ = index.live.matrix.near(conn, lambda q=q: q)
                assert len(snap.rowids)
                kinds = conn.execute(
                    f"SELECT count(*) FROM sources WHERE rowid IN ({','.join('?' * len(snap.rowids))})",  # noqa: S608,E501
                    snap.rowids.tolist(),
                ).fetchone()[0]
                assert kinds == len(snap.rowids)
        hits = recall_on(index, "s1 turn 5", k=5, session="mm-q").hits
        assert hits and all(h.session != "mm-s0" for h in hits)
    finally:
        index.close()


def _generation(home: Home) -> int:
    conn = sqlite3.connect(home.index_db)
    try:
        return conn.execute("SELECT generation FROM recall_mode").fetchone()[0]
    finally:
        conn.close()


DELETE_CASES = [
    # (sessions deleted, whether the highest rowid goes with them)
    ("mm-a", False),
    ("mm-c", True),
]


@pytest.mark.parametrize(("session", "bumps"), DELETE_CASES)
def test_a_delete_raises_the_generation_only_when_it_takes_the_highest_rowid(
    tmp_path, monkeypatch, session, bumps
):
    home = Home(tmp_path / "h")
    for name in ("mm-a", "mm-b", "mm-c"):
        append(home, name, [user("2023-05-01T10:00:00Z", f"{name} said {n}") for n in range(3)])
        index = opened(home, monkeypatch)
        index.catch_up_all()
        index.close()
    conn = sqlite3.connect(home.index_db, isolation_level=None)
    try:
        before = conn.execute("SELECT generation FROM recall_mode").fetchone()[0]
        conn.execute("BEGIN")
        hybrid_tables.rows_deleted(conn, "kind = 'session' AND session = ?", (session,))
        conn.execute("DELETE FROM sources WHERE session = ?", (session,))
        conn.execute("COMMIT")
        after = conn.execute("SELECT generation FROM recall_mode").fetchone()[0]
        left = conn.execute(
            "SELECT count(*) FROM vector_pending p JOIN sources s ON s.rowid = p.rowid"
        ).fetchone()[0]
    finally:
        conn.close()
    assert after == before + int(bumps)
    assert left == 6


# --- progress -------------------------------------------------------------------------------------
class FakeRate:
    def __init__(self, rate):
        self._rate = rate

    def rate(self):
        return self._rate


PROGRESS_CASES = [
    # (rows, with vectors, rate, the line's end)
    (10, 10, None, "all 10 records have their vector"),
    (1, 1, None, "embedding (recall mode hybrid): the 1 record has its vector"),
    (10, 4, None, "4 of 10 records have their vector, 6 waiting (found by their words meanwhile)"),
    (10, 4, 0.05, "6 waiting (found by their words meanwhile); 0.1 a second, about 2 min left"),
    (
        10,
        0,
        2.0,
        "0 of 10 records have their vector, 10 waiting (found by their words"
        " meanwhile); 2.0 a second, under a minute left",
    ),
    (10, 1, 0.001, "; 0.0 a second, about 2 h 30 min left"),
    (10, 1, 12.5, "; 12 a second, under a minute left"),
]


@pytest.mark.parametrize(("rows", "done", "rate", "ending"), PROGRESS_CASES)
def test_stats_shows_the_embedding_progress(tmp_path, monkeypatch, rows, done, rate, ending):
    home = Home(tmp_path / "h")
    append(home, "mm-a", [user("2023-05-01T10:00:00Z", f"turn {n}") for n in range(rows)])
    index = opened(home, monkeypatch)
    try:
        index.catch_up_all()
        conn = index._write()
        pending = [r for (r,) in conn.execute("SELECT rowid FROM vector_pending ORDER BY rowid")]
        conn.execute("BEGIN")
        for r in pending[:done]:
            conn.execute("INSERT INTO vectors VALUES (?, ?)", (r, int8.pack(np.ones(384))))
            conn.execute("DELETE FROM vector_pending WHERE rowid = ?", (r,))
        conn.execute("COMMIT")
        keep = FakeRate(rate)
        progress.register(home.index_db, keep)
        found = progress.embedding(home.index_db)
        assert (found["done"], found["pending"]) == (done, rows - done)
        assert progress.line(found).endswith(ending)
        shown = stats.render(stats.collect(home, 30, dt.datetime.now(dt.UTC)))
        assert progress.line(found) in shown.splitlines()
    finally:
        index.close()
    assert progress.embedding(tmp_path / "none.sqlite3") is None


def test_recall_answers_by_words_when_the_question_cannot_be_embedded(tmp_path, monkeypatch):
    home = Home(tmp_path / "h")
    append(home, "mm-a", [user("2023-05-01T10:00:00Z", "The quarterly report is due on Friday")])
    append(home, "mm-b", [user("2023-05-02T10:00:00Z", "We adopted a puppy last week")])
    index = Index(home, mode="hybrid")
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(60)

        def fails(texts):
            raise embedworker.WorkerFailed("the embedding process failed: no answer")

        monkeypatch.setattr(index.live._worker, "query", fails)
        hits = recall_on(index, "quarterly report", k=2, session="mm-q").hits
        assert [h.session for h in hits] == ["mm-a"]
    finally:
        index.close()


def test_once_the_ann_answers_the_question_is_embedded_beside_the_words(
    tmp_path, monkeypatch, small_ann
):
    """The question's vector and the ANN's candidates come from another thread while the recall
    ranks the words, with the answer the recall gives on one thread; a question that cannot be
    embedded then is still answered by its words."""
    with ann_over(tmp_path, monkeypatch, 6, clustered(600, seed=8)) as (index, _):
        threads = []
        propose, ready = vec.Matrix.propose, vec.Matrix.ann_ready

        def watched(self, embed_query):
            threads.append(threading.current_thread().name)
            return propose(self, embed_query)

        monkeypatch.setattr(vec.Matrix, "propose", watched)
        questions = [f"s{n % 6} turn {n * 7 % 100}" for n in range(12)]
        # The model loaded first: a question that waits past QUERY_SECONDS for it (a busy
        # machine) is answered by its words, and the two lists would differ for that alone.
        index.live._worker.embed(["the model loaded"])
        beside = [answer(index, q) for q in questions]
        assert threads and all(name.startswith("memoryd-dense") for name in threads)
        monkeypatch.setattr(vec.Matrix, "ann_ready", lambda self: False)  # near() on this thread
        alone = [answer(index, q) for q in questions]
        assert beside == alone
        assert threads[-1] == threading.current_thread().name

        def fails(texts):
            raise embedworker.WorkerFailed("the embedding process failed: no answer")

        monkeypatch.setattr(vec.Matrix, "ann_ready", ready)
        index.live._ahead.shutdown()  # memoryd closing: the recall embeds the question itself
        assert [answer(index, q) for q in questions] == alone
        monkeypatch.setattr(index.live._worker, "query", fails)
        assert index.live.matrix.ann_ready()
        hits = recall_on(index, "s2 turn 17", k=3, session="mm-q").hits
        assert hits and hits[0].session == "mm-s2"


def answer(index: Index, question: str) -> list[tuple[str, int]]:
    return [(h.session, h.record) for h in recall_on(index, question, k=5, session="mm-q").hits]


def test_the_wait_for_kept_vectors_is_not_said_as_a_failure_tried_again():
    """While a rebuilt index's kept vectors are given out nothing failed and nothing backs off."""
    from memoryd.modes import progress

    state = {"done": 40, "pending": 60, "paused": progress.CARRYING, "rate": None}
    said = progress.line(state)
    assert said is not None and said.endswith("; " + progress.CARRYING), said
    assert "less and less often" not in said
    failed = progress.line({**state, "paused": "the embedding process failed: no answer"})
    assert failed is not None and "paused, tried again less and less often" in failed
