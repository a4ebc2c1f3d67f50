"""A forget in recall mode context while a session writes ends, in steps of bounded size, its
merge aimed at what the forget owes. Each step used to be FTS5's 'merge' with a negative count,
which starts the merge of every segment again whenever a write has added one since the last
step: with a write between every two steps the forget never ended (and each new start added two
levels to the table's structure record, which FTS5 calls malformed past 2,000)."""

import functools
import json
import shutil
import sqlite3

import pytest

from memoryd.data import ftsmerge
from memoryd.index.index import Index
from proto.records import UserRecord, append_session_record
from tests.memoryd import owner_data_harness
from tests.memoryd.owner_data_harness import Memoryd, T

SECRET = "tangerine4417"
FILLER = " ".join(f"w{i}" for i in range(300))
STEPS_AT_MOST = 400  # the old loop's steps never end: this stops it


@pytest.fixture
def md(tmp_path, monkeypatch):
    monkeypatch.setattr(owner_data_harness, "Index", functools.partial(Index, mode="context"))
    m = Memoryd(tmp_path / "home")
    for n in range(10):  # rows in many transactions: the term lists span several segments
        m.say(f"s-fill{n}", f"filler row {n} about the garden", f"reply {n} {FILLER} {n}")
    m.say("s-secret", "the weather is mild", f"my bank vault code is {SECRET}", "ok")
    for n in range(10, 14):
        m.say(f"s-fill{n}", f"filler row {n} about the garden", f"reply {n} {FILLER} {n}")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _pages(m: Memoryd) -> int:
    """The leaf pages of the index's FTS5 tables (their structure records)."""
    conn = sqlite3.connect(m.index.path)
    try:
        return sum(
            last - first + 1
            for table in ftsmerge._fts5_tables(conn)
            for _, segments in ftsmerge._levels(conn, table)
            for first, last in segments
        )
    finally:
        conn.close()


def test_a_forget_while_a_session_writes_between_every_step_ends(md, monkeypatch):
    # Steps of a page: many of them, with a session's write (a record indexed, a new segment in
    # both FTS5 tables) after each one.
    monkeypatch.setattr(ftsmerge, "FIRST_PAGES", 1)
    monkeypatch.setattr(ftsmerge, "FEWEST_PAGES", 1)
    monkeypatch.setattr(ftsmerge, "MOST_PAGES", 1)
    asked: list[int] = []
    real_step = ftsmerge._step
    log = md.home.session_log("s-writer")
    log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)

    def step(index, table, pages, *rest):
        if len(asked) >= STEPS_AT_MOST:
            raise RuntimeError(f"the merge is not done after {len(asked)} steps")
        asked.append(pages)
        got = real_step(index, table, pages, *rest)
        # on the writer thread, as a session's write between two steps
        append_session_record(log, UserRecord(time=T, content=f"a note {len(asked)} {FILLER}"))
        index.catch_up_session("s-writer")
        return got

    monkeypatch.setattr(ftsmerge, "_step", step)
    owed = _pages(md)
    said = json.loads(md.admin("forget", {"id": "session:s-secret:1"}))["message"]
    assert "and the index" in said and "search lists" not in said
    assert not ftsmerge.owed_path(md.index).exists()
    assert len(asked) > 5  # steps, with writes between them
    # Each step asked for at most MOST_PAGES pages, and all of them for no more than the pages
    # the tables held when the merge began, once each table (what it owed), and a little more.
    assert max(asked) <= 1
    assert sum(asked) <= 2 * owed + 8
    conn = sqlite3.connect(md.index.path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for table in ftsmerge._fts5_tables(conn):
            assert len(ftsmerge._levels(conn, table)) < 12  # the structure record stays small
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    finally:
        conn.close()
    held = [p for p in md.index.path.parent.iterdir() if SECRET.encode() in p.read_bytes()]
    assert held == []
    assert md.recall(SECRET).startswith("(no matches")
    assert "filler row 3 about the garden" in md.recall("filler 3 garden")
    assert "a note 2" in md.recall("note 2")  # the writes between the steps are there


def test_a_step_never_asks_for_more_than_about_a_quarter_second_of_pages():
    # 0.2 to 0.3 ms a page (measured; 0.4 allowed for): MOST_PAGES stays near a quarter second,
    # never the 65,536 pages (tens of seconds at a million records) a step could once grow to.
    assert ftsmerge.MOST_PAGES * 0.4e-3 <= 0.5
    assert ftsmerge.FEWEST_PAGES <= ftsmerge.FIRST_PAGES <= ftsmerge.MOST_PAGES


def test_no_merge_is_started_on_a_table_near_fts5s_limit_of_levels(md, monkeypatch):
    """Each start of a merge of every segment adds up to two levels to the table's structure
    record, which FTS5 (SQLite 3.40) never takes away and calls malformed past 2,000: near that,
    the forget is done, and says its words wait for a reindex, which builds the tables anew."""
    monkeypatch.setattr(ftsmerge, "LEVELS_AT_MOST", 0)
    said = json.loads(md.admin("forget", {"id": "session:s-secret:1"}))["message"]
    assert "Its words stay in the index's search lists" in said
    assert "full-text structure has" in said and "bxctl reindex" in said
    assert md.recall(SECRET).startswith("(no matches")
    assert ftsmerge.owed_path(md.index).exists()  # owed still
    monkeypatch.undo()
    said = json.loads(md.admin("forget", {"id": "session:s-fill3:1"}))["message"]
    assert "search lists" not in said
    assert not ftsmerge.owed_path(md.index).exists()
    held = [p for p in md.index.path.parent.iterdir() if SECRET.encode() in p.read_bytes()]
    assert held == []
