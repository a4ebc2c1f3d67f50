"""Another program (a memoryd from before forget and the index's format stamp, run once on the
home) writes forgotten session records back into the index, leaving its stamp as it was: the next
start deletes them, says so in one line, and recall no longer finds them. A start after memoryd's
own last commit does not look."""

import logging
import sqlite3

import pytest

from memoryd import forgottensweep
from memoryd.journal import keptout
from tests.memoryd.owner_data_harness import Memoryd

WORD = "ZEBRAFORGOTTEN42"
TEXT = f"The repo word is {WORD}."
SOURCES = "SELECT s.*, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"


def _rows(m: Memoryd, session: str) -> list[tuple]:
    with m.index.reader() as conn:
        return conn.execute(SOURCES + " WHERE s.session = ?", (session,)).fetchall()


def _written_back(db, rows: list[tuple]) -> None:
    """What the older release leaves: the rows inserted again, the stamp and the record of
    memoryd's last commit untouched."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for *source, text in rows:
            cur = conn.execute("INSERT INTO hits (text) VALUES (?)", (text,))
            conn.execute(
                "INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cur.lastrowid, *source[1:]),
            )
        conn.execute("COMMIT")
    finally:
        conn.close()


@pytest.fixture
def forgot(tmp_path):
    """A home whose session monday said TEXT, which the owner then made memoryd forget; the
    rows it had before the forget."""
    m = Memoryd(tmp_path / "home")
    try:
        m.say("monday", TEXT, "Noted.")
        rows = [r for r in _rows(m, "monday") if WORD in r[-1]]
        assert rows
        m.data("forget", id="session:monday:0")
        assert not [r for r in _rows(m, "monday") if WORD in r[-1]]
    finally:
        m.close()
    return tmp_path / "home", rows


def test_records_written_back_by_another_program_are_deleted_at_start(forgot, caplog):
    home, rows = forgot
    _written_back(home / "index" / "memory.sqlite3", rows)
    caplog.set_level(logging.INFO, logger="memoryd")
    m = Memoryd(home)
    try:
        assert not [r for r in _rows(m, "monday") if WORD in r[-1]]
        assert m.recall(WORD).startswith("(no matches")
        said = [r.getMessage() for r in caplog.records if "forgotten.jsonl lists removed" in r.msg]
        assert len(said) == 1 and "1 record" in said[0] and "memory.sqlite3" in said[0]
        assert _rows(m, "monday")  # the rest of the session stays
    finally:
        m.close()


def test_a_start_after_memoryds_own_last_commit_does_not_look(forgot, monkeypatch):
    home, _rows_before = forgot
    looked: list[int] = []
    real = keptout.rows_condition
    monkeypatch.setattr(
        keptout, "rows_condition", lambda *a: looked.append(1) or real(*a), raising=True
    )
    m = Memoryd(home)
    try:
        assert looked == []
        assert forgottensweep.sweep(m.index) == 0 and looked == []
    finally:
        m.close()
