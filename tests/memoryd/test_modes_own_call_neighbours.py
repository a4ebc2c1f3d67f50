"""The agent's own recall and memory calls are no turn's neighbours in recall modes context and
hybrid: not in context's neighbour column (as rows are added, in parts, and as rows are deleted),
nor among hybrid's neighbour positions (the exact matrix and the ANN's pool alike). A turn beside
the agent's recall of a subject holds none of its words, and must not outrank the turns that do.
"""

import random
import sqlite3

import numpy as np
import pytest

from memoryd.data import purge
from memoryd.home import Home
from memoryd.index.index import Index
from tests.memoryd.test_modes_context import said, user
from tests.memoryd.test_modes_deleted_rows import built_afresh, context_rows
from tests.memoryd.test_modes_own_calls import called
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

QUESTION = "storage unit code"
THANKS = "Thanks, sounds fine."
SAID = [
    "The storage unit code is 4471, write that down somewhere",
    "The storage place raised its rent again",
    "Lost the key to the unit, need a locksmith",
    "I moved the bike into the storage unit on Friday",
]


def storage_home(home: Home) -> None:
    """Four sessions that speak of the storage unit, and six in which the agent recalled it
    among small talk."""
    for n, text in enumerate(SAID):
        day = f"2026-09-0{n + 1}T08:0"
        turns = [user(f"{day}0:00Z", "Hi there"), user(f"{day}1:00Z", text)]
        append(home, f"mm-s{n}", [*turns, said(f"{day}2:00Z", "Ok.")])
    for n in range(6):
        day = f"2026-09-1{n}T10:0"
        append(
            home,
            f"mm-b{n}",
            [
                user(f"{day}0:00Z", f"Can you plan my afternoon {n}?"),
                called(f"{day}0:02Z", "recall", '{"query": "storage unit code"}'),
                said(f"{day}0:05Z", f"Sure, here is a plan with a gym slot {n}."),
                user(f"{day}1:00Z", THANKS),
            ],
        )


def opened(home: Home, mode: str) -> Index:
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
    index = Index(home, mode=mode)
    index.open()
    return index


@pytest.mark.parametrize("mode", ["context", "hybrid"])
def test_turns_beside_the_agents_own_recalls_do_not_outrank_what_was_said(tmp_path, mode):
    home = Home(tmp_path / "h")
    storage_home(home)
    index = opened(home, mode)
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120)
        found = [hit.snippet for hit in recall_on(index, QUESTION, k=10, session="mm-q").hits]
    finally:
        index.close()
    assert set(SAID) <= set(found)
    last_said = max(found.index(text) for text in SAID)
    assert THANKS not in found[:last_said]


def test_no_neighbour_column_holds_an_own_call(tmp_path):
    home = Home(tmp_path / "h")
    storage_home(home)
    index = opened(home, "context")
    try:
        index.catch_up_all()
        rows = context_rows(home.index_db)
    finally:
        index.close()
    assert not [row for row in rows if "recall {" in row[2]]
    thanks = [row for row in rows if row[1] == THANKS]
    assert len(thanks) == 6
    # Its neighbours are the turns said before it, the recall between them passed over.
    assert all(row[2].startswith("Can you plan my afternoon") for row in thanks)


def own_call_records(rng: random.Random, count: int, start: int) -> list[dict]:
    """Turns, the agent's own recall and memory calls, and other tools' calls, at random."""
    records = []
    for n in range(start, start + count):
        time = f"2026-10-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z"
        kind = rng.choice(["user", "assistant", "recall", "memory", "read_file"])
        if kind == "user":
            records.append(user(time, f"turn {n} about lisbon"))
        elif kind == "assistant":
            records.append(said(time, f"answer {n} about miso"))
        else:  # another tool's call is a turn like any other
            word = "toolword" if kind == "read_file" else "ownword"
            records.append(called(time, kind, f'{{"query": "{word}{n}"}}'))
    return records


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_added_in_parts_and_purged_the_column_is_what_a_build_gives(tmp_path, seed):
    rng = random.Random(seed)
    home = Home(tmp_path / "h")
    index = opened(home, "context")
    try:
        counts = {"mm-0": 0, "mm-1": 0}
        for _step in range(5):
            for session in counts:
                added = rng.randint(1, 8)
                append(home, session, own_call_records(rng, added, counts[session]))
                counts[session] += added
                index.catch_up_session(session)
            rows = context_rows(home.index_db)
            assert rows == built_afresh(home.index_db, tmp_path)
            assert not [row for row in rows if "ownword" in row[2]]
            keys = [f"session:{s}:{rng.randrange(counts[s])}" for s in counts if counts[s]]
            purge.purge(index, keys)
            rows = context_rows(home.index_db)
            assert rows == built_afresh(home.index_db, tmp_path)
            assert not [row for row in rows if "ownword" in row[2]]
    finally:
        index.close()


def neighbour_rowids(rowids: np.ndarray, table: np.ndarray) -> dict[int, set[int]]:
    n = len(rowids)
    return {int(rowids[i]): {int(rowids[j]) for j in row if j < n} for i, row in enumerate(table)}


def test_hybrid_neighbour_positions_leave_out_own_calls(tmp_path):
    pytest.importorskip("onnxruntime")
    from memoryd.modes import vectors

    home = Home(tmp_path / "h")
    storage_home(home)
    append(home, "mm-b0", own_call_records(random.Random(7), 12, 10))
    index = opened(home, "hybrid")
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120)
        conn = sqlite3.connect(home.index_db)
        own = {
            rowid
            for (rowid,) in conn.execute(
                "SELECT s.rowid FROM sources s JOIN hits h ON h.rowid = s.rowid"
                " WHERE s.role = 'call' AND (h.text LIKE 'recall %' OR h.text LIKE 'memory %')"
            )
        }
        assert len(own) > 6
        matrix = index.live.matrix.refresh(conn)
        exact = neighbour_rowids(matrix.rowids, matrix.neighbours)
        query = np.ones(matrix.vectors.shape[1], dtype=np.float32) / matrix.vectors.shape[1] ** 0.5
        pool = vectors.around(conn, [int(r) for r in matrix.rowids], query)
        conn.close()
    finally:
        index.close()
    assert len(pool.rowids) == len(matrix.rowids) <= vectors.POOL
    assert exact == neighbour_rowids(pool.rowids, pool.neighbours)
    assert not [r for r, near in exact.items() if near & own]
    assert all(not exact[r] for r in own)
    thanks_rows = [r for r, near in exact.items() if len(near) == 2 and r not in own]
    assert thanks_rows  # the sessions' other turns still have their neighbours


def test_an_index_written_before_is_rebuilt_at_the_first_start(tmp_path):
    """An index of format 3 may hold an own call's words in its neighbours' column."""
    home = Home(tmp_path / "h")
    storage_home(home)
    index = opened(home, "context")
    index.catch_up_all()
    index.close()
    conn = sqlite3.connect(home.index_db)
    with conn:
        conn.execute("UPDATE settings SET value = '3' WHERE name = 'format'")
        conn.execute(
            "UPDATE context_hits SET near = ? WHERE text = ?",
            (f'Can you plan my afternoon?\nrecall {{"query": "{QUESTION}"}}', THANKS),
        )
    conn.close()
    index = opened(home, "context")
    try:
        index.catch_up_all()
        rows = context_rows(home.index_db)
    finally:
        index.close()
    assert [row for row in rows if row[1] == THANKS]
    assert not [row for row in rows if "recall {" in row[2]]
