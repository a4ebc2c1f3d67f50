"""A row of the index's sources table damaged or edited by hand: recall leaves that row out of its
answer (logged once, naming the file and the row) and answers with the rest, in every recall mode
that needs no extra; a reindex brings the row back from the logs. A sources row deleted by hand
does not stop the next records from being indexed."""

import logging
import sqlite3

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from tests.memoryd.test_modes_context import said, user
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

TURNS = [
    user("2023-05-01T10:00:00Z", "We adopted a puppy from the shelter last week"),
    said("2023-05-01T10:01:00Z", "A puppy from the shelter is lovely, what breed?"),
    user("2023-05-01T10:02:00Z", "A beagle mix puppy, very energetic"),
]
QUESTION = "puppy shelter beagle"
MODES = ["spec", "context"]
# (column, value written by hand): none of them is what memoryd writes (a number in a text
# column is stored as text, so those are blobs).
EDITS = [
    ("class", "zz"),
    ("class", None),
    ("kind", None),
    ("kind", "elsewhere"),
    ("session", None),
    ("session", b"\xff"),
    ("record", None),
    ("record", "zz"),
    ("record", 3.5),
    ("time", None),
    ("time", 42),
    ("time", "999-01-01T10:00:00Z"),  # a year of three digits, as an older memoryd stored it
    ("role", b"\xff"),
    ("untrusted", 2),
    ("untrusted", "yes"),
]


def _first_turn_rowid(path) -> int:
    conn = sqlite3.connect(path)
    try:
        (rowid,) = conn.execute("SELECT rowid FROM hits WHERE text LIKE 'We adopted%'").fetchone()
        return rowid
    finally:
        conn.close()


def _edit(path, sql: str, args: tuple) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, args)
        conn.commit()
    finally:
        conn.close()


def _indexed(home: Home, mode: str) -> Index:
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    return index


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("column", "value"), EDITS, ids=[f"{c}={v!r}" for c, v in EDITS])
def test_a_damaged_sources_row_is_left_out_and_logged_once(tmp_path, caplog, mode, column, value):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", TURNS)
    _indexed(home, mode).close()
    damaged = _first_turn_rowid(home.index_db)
    # The test's own column names, never input.
    _edit(home.index_db, f"UPDATE sources SET {column} = ? WHERE rowid = ?", (value, damaged))  # noqa: S608

    index = _indexed(home, mode)
    try:
        with caplog.at_level(logging.WARNING):
            first = recall_on(index, QUESTION, k=5, session="mm-q")
            second = recall_on(index, QUESTION, k=5, session="mm-q")
        for found in (first, second):
            snippets = [hit.snippet for hit in found.hits]
            assert len(snippets) == 2 and not any("We adopted" in s for s in snippets)
            assert found.label.klass == "private"  # the other rows' class, not the edited one
        lines = [r.getMessage() for r in caplog.records if "memory-index-damaged" in r.getMessage()]
        assert len(lines) == 1
        assert lines[0].startswith(f"memory-index-damaged: {home.index_db}: row {damaged} of")
        assert column in lines[0] and "`bxctl reindex`" in lines[0]
        index.reindex()  # rebuilt from the logs: the row is back as it was written
        again = recall_on(index, QUESTION, k=5, session="mm-q").hits
        assert any(hit.snippet.startswith("We adopted") for hit in again)
    finally:
        index.close()


@pytest.mark.parametrize("mode", MODES)
def test_records_after_a_sources_row_deleted_by_hand_are_indexed(tmp_path, mode):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", TURNS)
    _indexed(home, mode).close()
    # The last row of sources goes; its text stays in hits (and in context's table).
    _edit(home.index_db, "DELETE FROM sources WHERE rowid = (SELECT max(rowid) FROM sources)", ())
    index = _indexed(home, mode)
    try:
        append(home, "mm-pets", [user("2023-05-02T09:00:00Z", "The vet said the kitten is fine")])
        index.catch_up_all()
        hits = recall_on(index, "vet kitten", k=5, session="mm-q").hits
        assert hits and hits[0].snippet == "The vet said the kitten is fine"
    finally:
        index.close()


@pytest.mark.parametrize("value", [None, 42, 3.5], ids=["null", "integer", "real"])
def test_a_row_whose_text_is_not_text_is_left_out_and_logged_once(tmp_path, caplog, value):
    """context still finds the row through its own table's copy of the words; its text in hits,
    which the snippet is cut from, was edited away."""
    home = Home(tmp_path / "h")
    append(home, "mm-pets", TURNS)
    _indexed(home, "context").close()
    damaged = _first_turn_rowid(home.index_db)
    _edit(home.index_db, "UPDATE hits SET text = ? WHERE rowid = ?", (value, damaged))
    index = _indexed(home, "context")
    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(2):
                hits = recall_on(index, QUESTION, k=5, session="mm-q").hits
                assert {hit.snippet for hit in hits} == {TURNS[1]["content"], TURNS[2]["content"]}
        lines = [r.getMessage() for r in caplog.records if "memory-index-damaged" in r.getMessage()]
        assert len(lines) == 1 and f"row {damaged} of sources has no text in hits" in lines[0]
    finally:
        index.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_record_of_a_year_before_1000_with_an_offset_is_shown_as_it_was_said(tmp_path, mode):
    """Its time is stored in UTC with a four-digit year, so the hit's line reads it right."""
    home = Home(tmp_path / "h")
    append(home, "oldtimes", [user("0999-01-01T10:00:00+00:00", "A zanzibarine chalice")])
    index = _indexed(home, mode)
    try:
        hits = recall_on(index, "zanzibarine chalice", k=5, session="mm-q").hits
        assert [hit.time for hit in hits] == ["0999-01-01T10:00:00Z"]
        assert "session oldtimes, 0999-01-01 10:00 UTC, the owner said" in hits[0].header(1)
    finally:
        index.close()
