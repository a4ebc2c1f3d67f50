"""Snippets cut without loading a record's whole text (textcut.py)."""

import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.search.query import snippet
from memoryd.search.textcut import HEAD, WHOLE, _decode_prefix, long_snippet
from tests.memoryd.test_recall import user, write_log
from tests.recalling import recall_on


def _index(tmp_path, texts) -> Index:
    """An index that keeps whole texts (a cap far above [index] max_record_bytes' default), so
    the texts here are longer than what textcut reads whole."""
    home = Home(tmp_path)
    write_log(home, "mm-1", [user(text) for text in texts])
    index = Index(home, max_record_bytes=1 << 30)
    index.open()
    index.catch_up_all()
    return index


def test_a_huge_record_is_not_loaded_to_cut_its_snippet(tmp_path):
    huge = "needle " + "filler " * 600_000  # 4.2 MB
    index = _index(tmp_path, [huge])
    recall_on(index, "warm up", session="mm-2")
    tracemalloc.start()
    try:
        answer = recall_on(index, "needle", session="mm-2")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        index.close()
    header, text = answer.text.split("\n")
    assert text == snippet(huge, ["needle"])
    assert peak < 1_000_000, peak


def test_a_huge_record_gives_the_window_around_its_first_match(tmp_path):
    huge = "filler " * 5_000 + "needle in the hay " + "filler " * 100_000
    index = _index(tmp_path, [huge])
    header, text = recall_on(index, "needle", session="mm-2").text.split("\n")
    index.close()
    assert text == snippet(huge, ["needle"])
    assert "needle" in text


def test_a_match_past_the_first_bytes_of_a_huge_record_is_not_looked_for(tmp_path):
    huge = "filler " * (WHOLE // 7 + 1_000) + "needle " + "filler " * 10
    index = _index(tmp_path, [huge])
    header, text = recall_on(index, "needle", session="mm-2").text.split("\n")
    index.close()
    assert text == huge[:599] + "…"


def test_texts_of_normal_size_are_cut_as_before(tmp_path):
    texts = [
        "short text with needle",
        "filler " * 300 + "needle " + "filler " * 300,
        "  \n needle " + "x" * (WHOLE - 20),
        "é" * (WHOLE // 2 - 10) + " needle",  # two bytes a character: under WHOLE bytes
    ]
    index = _index(tmp_path, texts)
    hits = recall_on(index, "needle", k=10, session="mm-2").hits
    index.close()
    assert sorted(hit.snippet for hit in hits) == sorted(snippet(t, ["needle"]) for t in texts)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40), st.integers(0, 3))
def test_a_prefix_cut_in_a_character_drops_only_that_character(text, cut):
    data = text.encode("utf-8")
    prefix = data[: max(0, len(data) - cut)]
    decoded = _decode_prefix(prefix)
    assert text.startswith(decoded)
    assert len(text) - len(decoded) <= cut + 1


def test_long_snippet_matches_snippet_when_the_match_is_early():
    text = "a " * 200 + "needle " + "b " * (HEAD // 2)
    assert long_snippet(text, ["needle"]) == snippet(text, ["needle"])
