"""While a changed recall mode's tables are built, recall answers by the spec's search, and its
line in recalls/ says so: "mode": "spec" (the mode that answered) and "building" the configured
one, the line's other fields kept ("partial": true); once built, the mode answers and the line
names it alone, as before."""

import json

import pytest

from memoryd import modes
from memoryd.index.index import Index
from tests.memoryd.test_mode_build_parts import PART, _spec_home
from tests.recalling import recall_on


def _lines(home) -> list[dict]:
    lines = []
    for path in sorted(home.recalls.glob("*.jsonl")):
        lines += [json.loads(raw) for raw in path.read_text().splitlines()]
    return lines


@pytest.fixture()
def parts(monkeypatch):
    monkeypatch.setattr(modes, "FILL_BATCH", PART)


def test_a_recall_during_a_build_is_logged_as_the_spec_answering(tmp_path, parts):
    home = _spec_home(tmp_path, {"mm-1": 10, "mm-2": 5})
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        index.catching_up = None
        assert not index.prepare_mode_part()
        during = recall_on(index, "mm-1 3", session="mm-ask").text
        recall_on(index, "", session="mm-ask")  # no word to search: as the index stands
        while not index.prepare_mode_part():
            pass
        recall_on(index, "mm-1 3", session="mm-ask")
    finally:
        index.close()
    assert "being prepared" in during
    first, empty, after = _lines(home)
    assert first["mode"] == "spec" and first["building"] == "context"
    assert first["partial"] is True and first["query"] == "mm-1 3" and first["hits"]
    assert empty["mode"] == "spec" and empty["building"] == "context"
    assert after["mode"] == "context" and "building" not in after


def test_a_spec_index_logs_no_mode(tmp_path):
    home = _spec_home(tmp_path, {"mm-1": 4})
    index = Index(home)
    index.open(defer_mode=True)
    try:
        recall_on(index, "mm-1 3", session="mm-ask")
    finally:
        index.close()
    (line,) = _lines(home)
    assert "mode" not in line and "building" not in line
