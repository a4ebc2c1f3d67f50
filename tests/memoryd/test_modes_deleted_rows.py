"""Rows deleted from the index (a forget, a rewritten log, a restore's purge) leave nothing of
themselves in what recall modes context and hybrid derive from a row's neighbours: the neighbour
column of the turns around them is written again as a build from the remaining rows writes it,
and hybrid's exact matrix drops their vectors (and finds each row's neighbours again) before the
next recall, as a restart would load it."""

import random
import sqlite3

import pytest

from memoryd import modes
from memoryd.data import purge
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.journal import forgotten, keptout
from memoryd.modes.lexbound import TermCounts
from tests.memoryd.test_modes_context import user
from tests.memoryd.test_reindex import append, append_note, random_records
from tests.recalling import recall_on


def context_rows(path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT rowid, text, near, date FROM context_hits ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def built_afresh(path, tmp_path) -> list[tuple]:
    """context_hits as a build from the file's spec tables (a mode switch) writes it."""
    copy = tmp_path / "afresh.sqlite3"
    source, target = sqlite3.connect(path), sqlite3.connect(copy, isolation_level=None)
    try:
        source.backup(target)
        target.execute("BEGIN")
        modes.prepare(target, "spec")
        modes.prepare(target, "context")
        target.execute("COMMIT")
    finally:
        source.close()
        target.close()
    try:
        return context_rows(copy)
    finally:
        copy.unlink()


TURNS = [f"turn {n} about the {w}" for n, w in enumerate("abcdefghijkl")]


def two_sessions(home: Home) -> None:
    """mm-a and mm-b written in turns (their rowids interleaved), then mm-c."""
    for n, text in enumerate(TURNS):
        for session in ("mm-a", "mm-b"):
            append(home, session, [user(f"2026-05-01T10:{n:02d}:00Z", f"{session} {text}")])
    append(home, "mm-c", [user("2026-05-02T10:00:00Z", f"mm-c {t}") for t in TURNS[:3]])


# The keys forgotten at once: one turn, neighbours, one turn apart, the ends, across sessions,
# a whole short session, most of a session.
KEY_CASES = [
    ["session:mm-a:5"],
    ["session:mm-a:5", "session:mm-a:6"],
    ["session:mm-a:4", "session:mm-a:6"],
    ["session:mm-a:3", "session:mm-a:7", "session:mm-a:8"],
    ["session:mm-a:0"],
    ["session:mm-a:11"],
    ["session:mm-a:2", "session:mm-b:2", "session:mm-c:1"],
    ["session:mm-c:0", "session:mm-c:1", "session:mm-c:2"],
    [f"session:mm-b:{n}" for n in range(12) if n != 6],
]


@pytest.mark.parametrize("mode", ["context", "hybrid"])
@pytest.mark.parametrize("keys", KEY_CASES)
def test_a_purge_writes_the_neighbour_column_again_as_a_build_does(
    tmp_path, monkeypatch, mode, keys
):
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
        from memoryd.modes import hybrid

        monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)  # no vectors needed here
    home = Home(tmp_path / "home")
    two_sessions(home)
    index = Index(home, mode=mode)
    index.open()
    try:
        index.catch_up_all()
        before = len(context_rows(home.index_db))
        purge.purge(index, keys)
        rows = context_rows(home.index_db)
        assert len(rows) == before - len(keys)
        assert rows == built_afresh(home.index_db, tmp_path)
        forgotten = [f"{key.split(':')[1]} turn {key.rsplit(':', 1)[1]} about" for key in keys]
        assert not [text for row in rows for text in forgotten if text in row[2]]
    finally:
        index.close()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_purges_and_rewrites_leave_what_a_build_gives(tmp_path, seed):
    rng = random.Random(seed)
    home = Home(tmp_path / "home")
    index = Index(home, mode="context", max_class="secret")
    index.open()
    try:
        sessions = [f"mm-{n}" for n in range(3)]
        counts = dict.fromkeys(sessions, 0)
        for step in range(6):
            for session in rng.sample(sessions, 2):
                added = rng.randint(1, 10)
                append(home, session, random_records(rng, added))
                counts[session] += added
                index.catch_up_session(session)
            append_note(home, step, rng)
            index.catch_up_notes()
            keys = [
                f"session:{session}:{rng.randrange(counts[session])}"
                for session in rng.sample(sessions, 2)
                if counts[session]
            ]
            purge.purge(index, [*keys, f"note:{rng.randrange(step + 1)}"])
            assert context_rows(home.index_db) == built_afresh(home.index_db, tmp_path)
        # A log rewritten: every row of it goes, then its new ones come.
        home.session_log("mm-0").write_text("")
        append(home, "mm-0", random_records(rng, 4))
        index.catch_up_all()
        assert context_rows(home.index_db) == built_afresh(home.index_db, tmp_path)
    finally:
        index.close()


def test_a_forgotten_turn_is_not_recalled_through_its_neighbours(tmp_path):
    home = Home(tmp_path / "home")
    append(
        home,
        "mm-a",
        [
            user("2026-05-01T10:00:00Z", "I want to plan a holiday"),
            user("2026-05-01T10:00:05Z", "Where would you like to go?"),
            user("2026-05-01T10:00:10Z", "My bank password is zorblax hunter quixotic"),
            user("2026-05-01T10:00:15Z", "Noted, anything else?"),
            user("2026-05-01T10:00:20Z", "Maybe the mountains in June"),
        ],
    )
    index = Index(home, mode="context")
    index.open()
    try:
        index.catch_up_all()
        assert "zorblax" in recall_on(index, "zorblax quixotic", session="mm-q").text
        purge.purge(index, ["session:mm-a:2"])
        assert recall_on(index, "zorblax quixotic", session="mm-q").hits == []
        # The turn after it has the turns on either side for neighbours now: found through them.
        assert "Noted, anything else?" in recall_on(index, "holiday", session="mm-q").text
    finally:
        index.close()


def test_term_counts_kept_for_hybrid_are_counted_again_after_a_delete(tmp_path):
    home = Home(tmp_path / "home")
    append(home, "mm-a", [user("2026-05-01T10:00:00Z", f"kestrel {n}") for n in range(30)])
    index = Index(home, mode="context")
    index.open()
    counts = TermCounts()
    try:
        index.catch_up_all()
        with index.reader() as conn:
            assert counts.share(conn, "kestrel") == (30, 30)
        purge.purge(index, ["session:mm-a:3"])  # within the drift the counts are kept across
        with index.reader() as conn:
            assert counts.share(conn, "kestrel") == (29, 29)
            assert counts.bound(conn, ["kestrel"]) > 0.0
    finally:
        index.close()


def test_a_reindex_across_a_forget_swaps_in_neighbours_without_it(tmp_path, monkeypatch):
    """The forget comes after the build read its record: the new file's catch-up deletes it."""
    home = Home(tmp_path / "home")
    two_sessions(home)
    index = Index(home, mode="context")
    index.open()
    try:
        index.catch_up_all()
        built = index.build_new()
        keys = frozenset({"session:mm-a:5", "session:mm-b:6"})
        monkeypatch.setattr(forgotten, "keys", lambda home: keys)
        monkeypatch.setattr(keptout, "hiding", lambda home: keys)  # a forget listing keys
        index.finish_new(built)
        rows = context_rows(home.index_db)
        assert rows == built_afresh(home.index_db, tmp_path)
        assert not [row for row in rows if "mm-a turn 5 " in row[2] or "mm-b turn 6 " in row[2]]
    finally:
        index.close()
