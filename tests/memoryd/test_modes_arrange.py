"""The last step of context and hybrid recall: the agent's own recall and memory calls never
outrank what was said, a session run does not crowd out another session's hit, and the fused
parts add up as fusion.py says."""

import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.modes import fusion
from memoryd.modes.arrange import SURE, Place, SpecRanking, arrange, keep_spec, own_call, sure


@pytest.mark.parametrize(
    ("role", "text", "expected"),
    [
        ("call", 'recall {"query": "launch window"}', True),
        ("call", 'memory {"action": "add"}', True),
        ("call", 'web_search {"query": "recall"}', False),
        ("call", "recaller x", False),
        ("user", "recall the launch window", False),
        ("assistant", "memory is fine", False),
        ("call", None, False),
    ],
)
def test_own_calls_are_the_recall_and_memory_tools(role, text, expected):
    assert own_call(role, text) is expected


def said(session: str | None, record: int, time: str | None = None) -> Place:
    return Place(session, record, False, None, "session" if session else "noted", time)


def call(session: str, record: int) -> Place:
    return Place(session, record, True)


# (scores, places, k, damp, expected order)
CASES = [
    # The agent's recall call repeats the question: it scores best, and still comes last.
    (
        {1: 9.0, 2: 1.0, 3: 0.5},
        {1: call("a", 0), 2: said("b", 5), 3: said("c", 9)},
        3,
        1.0,
        [2, 3, 1],
    ),
    # ...and leaves the answer when k is full of what was said.
    ({1: 9.0, 2: 1.0, 3: 0.5}, {1: call("a", 0), 2: said("b", 5), 3: said("c", 9)}, 2, 1.0, [2, 3]),
    # Damping off: the scores' order, equal scores the newer row first (not the lower rowid: a
    # rebuilt index numbers rows in another order)...
    (
        {4: 1.0, 2: 1.0, 3: 2.0},
        {
            4: said("a", 7, "2026-11-03T12:00:00Z"),
            2: said("b", 1, "2026-11-01T12:00:00Z"),
            3: said("a", 2),
        },
        3,
        1.0,
        [3, 4, 2],
    ),
    # ...and at the same time by session, then record.
    (
        {4: 1.0, 2: 1.0, 5: 1.0},
        {
            4: said("a", 3, "2026-11-03T12:00:00Z"),
            2: said("b", 1, "2026-11-03T12:00:00Z"),
            5: said("a", 2, "2026-11-03T12:00:00Z"),
        },
        3,
        1.0,
        [5, 4, 2],
    ),
    # With damping on, a tie is broken the same way.
    (
        {4: 1.0, 2: 1.0},
        {4: said("a", 7, "2026-11-03T12:00:00Z"), 2: said("b", 1, "2026-11-01T12:00:00Z")},
        1,
        0.7,
        [4],
    ),
    # A run of neighbours (a, 1..3) passes its second row, but another session's nearly as
    # good hit (9: 0.8 against 0.9 x 0.7) comes before the run's third.
    (
        {1: 1.0, 2: 0.9, 3: 0.85, 9: 0.8},
        {1: said("a", 1), 2: said("a", 2), 3: said("a", 3), 9: said("b", 40)},
        3,
        0.7,
        [1, 9, 2],
    ),
    # Far apart in the same session is not a run.
    (
        {1: 1.0, 2: 0.9, 9: 0.8},
        {1: said("a", 1), 2: said("a", 30), 9: said("b", 4)},
        2,
        0.7,
        [1, 2],
    ),
    # Notes (no session) never damp anything.
    (
        {1: 1.0, 2: 0.9, 9: 0.8},
        {1: said(None, 1), 2: said(None, 2), 9: said("b", 4)},
        2,
        0.7,
        [1, 2],
    ),
    # A row missing from places (deleted meanwhile) is left out.
    ({1: 1.0, 2: 0.9}, {2: said("a", 1)}, 2, 0.7, [2]),
]


@pytest.mark.parametrize(("scores", "places", "k", "damp", "expected"), CASES)
def test_arrange(scores, places, k, damp, expected):
    assert arrange(scores, places, k, damp) == expected


@st.composite
def candidates(draw):
    n = draw(st.integers(0, 30))
    rowids = draw(st.lists(st.integers(1, 10_000), min_size=n, max_size=n, unique=True))
    scores = {r: draw(st.floats(0.0, 5.0)) for r in rowids}
    places = {
        r: Place(
            draw(st.sampled_from(["a", "b", "c", None])),
            draw(st.integers(0, 20)),
            draw(st.booleans()),
        )
        for r in rowids
    }
    return scores, places


@given(candidates(), st.integers(1, 12), st.sampled_from([1.0, 0.85, 0.5]))
def test_arrange_keeps_k_own_calls_last_and_the_best_said_row_first(found, k, damp):
    scores, places = found
    order = arrange(scores, places, k, damp)
    assert len(order) == min(k, len(scores)) and len(set(order)) == len(order)
    kinds = [places[r].own_call for r in order]
    assert kinds == sorted(kinds)  # what was said, then the agent's own calls
    said_rows = [r for r in scores if not places[r].own_call]
    if said_rows:
        best = min(said_rows, key=lambda r: (-scores[r], places[r].tie_key(r)))
        assert order[0] == best


def test_the_parts_add_up():
    combined: dict[int, float] = {}
    fusion.add_lexical(combined, [(1, -10.0), (2, -5.0)], 0.5, 0.0)  # over the best row: 1, 0.5
    fusion.add_spec(combined, [2, 3], 0.3)  # ranks 0 and 1: 5/5, 5/6
    fusion.add_dense(combined, np.array([1, 3, 4]), np.array([0.9, 0.5, 0.1]), 0.2, 100)
    assert combined[1] == pytest.approx(0.5 + 0.2 * 1.0)
    assert combined[2] == pytest.approx(0.25 + 0.3)
    assert combined[3] == pytest.approx(0.3 * 5 / 6 + 0.2 * 0.5)
    assert combined[4] == pytest.approx(0.0)


def test_a_bound_above_the_best_row_scales_the_lexical_part_down():
    combined: dict[int, float] = {}
    fusion.add_lexical(combined, [(1, -10.0)], 1.0, 40.0)
    assert combined[1] == pytest.approx(0.25)
    fusion.add_lexical(combined, [(2, -10.0)], 1.0, 5.0)  # a stale bound below the best row
    assert combined[2] == pytest.approx(1.0)


@given(
    candidates(),
    st.lists(st.integers(1, 10_000), max_size=8, unique=True),
    st.integers(1, 12),
)
def test_the_spec_best_rows_are_kept_near_the_top(found, spec, k):
    scores, places = found
    spec = [r for r in spec if r in places] + [r for r in places if r not in spec][:2]
    deadlines = (2, 4, 7, 9)
    order = arrange(scores, places, 12)
    full = keep_spec(order, spec, places, deadlines, 12)
    kept = [r for r in spec if not places[r].own_call][: len(deadlines)]
    for deadline, rowid in zip(deadlines, kept, strict=False):
        if deadline <= len(full):
            assert full.index(rowid) < deadline
    assert len(set(full)) == len(full)
    assert set(full) <= set(order) | set(kept)
    assert keep_spec(order, spec, places, deadlines, k) == full[:k]  # the list for k is a prefix


def test_keep_spec_moves_the_spec_best_up_but_never_down():
    where = {r: Place("a", r * 10, False) for r in range(1, 9)}
    # The spec's best (8) is due at 2, its second (7) at 4; 1 and 2 keep their places.
    assert keep_spec([1, 2, 3, 4, 5, 6], [8, 7], where, (2, 4), 6) == [1, 8, 2, 7, 3, 4]
    # Already near the top: nothing moves.
    assert keep_spec([8, 7, 1, 2], [8, 7], where, (2, 4), 4) == [8, 7, 1, 2]


@given(
    candidates(),
    st.lists(st.integers(1, 10_000), max_size=8, unique=True),
    st.integers(1, 12),
    st.sampled_from([(2, 5), (2, 4, 7, 9), (2, 4, 7, 9, 10)]),
    st.data(),
)
def test_the_spec_rows_it_is_sure_of_are_kept_at_their_deadlines_the_others_late(
    found, spec, k, deadlines, data
):
    scores, places = found
    spec = [r for r in spec if r in places] + [r for r in places if r not in spec][:2]
    sure = set(data.draw(st.lists(st.sampled_from(spec), unique=True))) if spec else set()
    order = arrange(scores, places, 12)
    full = keep_spec(order, spec, places, deadlines, 12, sure)
    kept = [r for r in spec if not places[r].own_call][: len(deadlines)]
    n = len(kept)
    for i, (deadline, rowid) in enumerate(zip(deadlines, kept, strict=False)):
        due = deadline if rowid in sure else max(deadline, deadlines[-1] - n + 1 + i)
        if due <= len(full):
            assert full.index(rowid) < due  # the rule keeps it: it is never out of its top
    assert len(set(full)) == len(full) and set(full) <= set(order) | set(kept)
    assert keep_spec(order, spec, places, deadlines, k, sure) == full[:k]  # k-prefix
    # Carried by the ranking itself, as context and hybrid pass it.
    assert keep_spec(order, SpecRanking(spec, frozenset(sure)), places, deadlines, 12) == full


@given(
    candidates(),
    st.lists(st.integers(1, 10_000), max_size=8, unique=True),
    st.integers(1, 12),
    st.data(),
)
def test_without_late_a_row_the_spec_is_not_sure_of_stays_where_it_was(found, spec, k, data):
    scores, places = found
    spec = [r for r in spec if r in places] + [r for r in places if r not in spec][:2]
    sure = set(data.draw(st.lists(st.sampled_from(spec), unique=True))) if spec else set()
    deadlines = (2, 5)
    order = arrange(scores, places, 12)
    full = keep_spec(order, spec, places, deadlines, 12, sure, late=False)
    kept = [r for r in spec if not places[r].own_call][: len(deadlines)]
    for deadline, rowid in zip(deadlines, kept, strict=False):
        if rowid in sure and deadline <= len(full):
            assert full.index(rowid) < deadline
    moved = {r for r in kept if r in sure}
    assert [r for r in full if r not in moved] == [r for r in order if r not in moved][
        : len(full) - len(moved & set(full))
    ]
    assert keep_spec(order, spec, places, deadlines, k, sure, late=False) == full[:k]


@pytest.mark.parametrize(
    ("sure", "late", "expected"),
    [
        (None, True, [1, 8, 2, 7, 3, 4]),  # no rule: both at their deadlines
        ({7, 8}, True, [1, 8, 2, 7, 3, 4]),
        # 8 not sure: at the end of the deadlines, the first of two rows by 4 - 2 + 1 = 3.
        ({7}, True, [1, 2, 8, 7, 3, 4]),
        (set(), True, [1, 2, 8, 7, 3, 4]),
        ({7}, False, [1, 2, 3, 7, 4, 5]),  # not kept at all: its deadline goes unused
        (set(), False, [1, 2, 3, 4, 5, 6]),
    ],
)
def test_keep_spec_by_what_the_spec_is_sure_of(sure, late, expected):
    where = {r: Place("a", r * 10, False) for r in range(1, 9)}
    assert keep_spec([1, 2, 3, 4, 5, 6], [8, 7], where, (2, 4), 6, sure, late) == expected


# (scores, places, k, damp, free, expected): free picks in a run before its rows are damped.
FREE_CASES = [
    # One pick of the run is free: its second row (2) still passes 9; its third (3) is damped.
    (
        {1: 1.0, 2: 0.9, 3: 0.85, 9: 0.8},
        {1: said("a", 1), 2: said("a", 2), 3: said("a", 3), 9: said("b", 40)},
        4,
        0.7,
        1,
        [1, 2, 9, 3],
    ),
    # Without the free pick the run's second row comes after 9.
    (
        {1: 1.0, 2: 0.9, 3: 0.85, 9: 0.8},
        {1: said("a", 1), 2: said("a", 2), 3: said("a", 3), 9: said("b", 40)},
        4,
        0.7,
        0,
        [1, 9, 2, 3],
    ),
]


@pytest.mark.parametrize(("scores", "places", "k", "damp", "free", "expected"), FREE_CASES)
def test_a_run_damps_only_past_its_free_picks(scores, places, k, damp, free, expected):
    assert arrange(scores, places, k, damp, 4, free) == expected


@given(candidates(), st.integers(1, 12), st.sampled_from([1.0, 0.9, 0.5]), st.integers(0, 2))
def test_arrange_is_a_prefix_of_itself(found, k, damp, free):
    scores, places = found
    assert (
        arrange(scores, places, k, damp, 4, free) == arrange(scores, places, 12, damp, 4, free)[:k]
    )


def _hits(texts: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE hits USING fts5(text, tokenize = 'unicode61')")
    conn.executemany("INSERT INTO hits (rowid, text) VALUES (?, ?)", enumerate(texts, 1))
    return conn


def _ranking(conn: sqlite3.Connection, expression: str, depth: int) -> list[int]:
    sql = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
    return [r for (r,) in conn.execute(sql, (expression, depth))]


def test_the_spec_is_sure_of_a_row_that_stands_out_not_of_a_crowd():
    # Row 1 holds the rare words; rows 2.. each hold the common name once, alike.
    texts = ["the ukulele lesson with Jon went well, ukulele chords"]
    texts += [f"hey Jon, how was day {n}" for n in range(12)] + ["filler text"] * 40
    conn = _hits(texts)
    expression = '"ukulele" OR "lesson" OR "Jon"'
    ranking = _ranking(conn, expression, 10)
    assert ranking[0] == 1
    assert sure(conn, expression, ranking, 10) == frozenset({1})
    crowd = '"Jon" OR "day"'  # every row of the ranking scores alike: none stands out
    assert sure(conn, crowd, _ranking(conn, crowd, 10), 10) == frozenset()


def test_a_ranking_shorter_than_its_depth_is_sure_of_every_row():
    conn = _hits(["alpha beta", "beta gamma", "delta"])
    expression = '"beta"'
    assert sure(conn, expression, _ranking(conn, expression, 10), 10) is None


@given(st.lists(st.sampled_from(["jon", "ukulele", "day", "lesson", "x", "y"]), max_size=6))
def test_the_sure_rows_are_a_prefix_scoring_sure_times_the_last(words):
    texts = [" ".join(words[: 1 + n % 6]) or "x" for n in range(30)] + ["jon"] * 10
    conn = _hits(texts)
    expression = '"jon" OR "ukulele" OR "lesson"'
    ranking = _ranking(conn, expression, 10)
    found = sure(conn, expression, ranking, 10)
    if found is None:
        assert len(ranking) < 10
        return
    scores = dict(
        conn.execute(
            "SELECT rowid, -bm25(hits) FROM hits WHERE hits MATCH ?", (expression,)
        ).fetchall()
    )
    assert found == frozenset(ranking[: len(found)])
    assert all(scores[r] >= SURE * scores[ranking[-1]] for r in found)
    if len(found) < len(ranking) - 1:
        assert scores[ranking[len(found)]] < SURE * scores[ranking[-1]]


def test_a_sure_row_sharing_its_deadline_with_a_late_one_is_still_kept_by_it():
    # Three spec rows, the third sure (due at 7), the first two not (due late: at 7 and 8): both
    # rows due at 7 are placed by 7, and the one due at 8 by 8, ahead of order's own rows.
    where = {r: Place("a", 0, False) for r in range(1, 13)}
    order = [7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6]
    full = keep_spec(order, [1, 2, 3], where, (2, 4, 7, 9), 12, {3})
    assert full.index(3) < 7 and full.index(1) < 7 and full.index(2) < 8
    assert full[:5] == [7, 8, 9, 10, 11]  # order's own rows until then
