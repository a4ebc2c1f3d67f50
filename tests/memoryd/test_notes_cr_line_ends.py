"""notes.md saved with CR line ends (an editor on another system), or with CR LF, is read into the
index line by line as memory/notes.py parses it: a CR ends a line as an LF does. Every note the
parser sees is indexed by the catch-up and by a reindex, at once, not when an LF next follows,
each under the number notes.md gives it, found by recall and search by that number. A CR LF whose
LF comes after a catch-up read its CR (a save still being written) is one line end: the next
catch-up reads on, the numbers unchanged, rather than reading notes.md again from its start.
In-process on a real home and a real index."""

import datetime as dt
import logging
import sqlite3
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index import noteslong
from memoryd.index.index import Index
from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd

WHEN = dt.datetime(2026, 9, 24, 18, 20, tzinfo=dt.UTC)
WORDS = ["zebra crossing", "heron pond", "walnut tree", "copper kettle", "violet lamp"]


def _notes(words: list[str], end: bytes) -> bytes:
    """Notes memoryd would write, one per words, two lines of text each, lines ended by end."""
    text = "".join(
        notes.noted(f"The {w} note.\nSecond line.", WHEN, "mm-1", "private", False) for w in words
    )
    return text.replace("\n", end.decode()).encode()


def _rows(index: Path) -> list[tuple]:
    conn = sqlite3.connect(index)
    try:
        return conn.execute(
            "SELECT s.record, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE s.kind IN ('noted', 'moved', 'dropped') ORDER BY s.record"
        ).fetchall()
    finally:
        conn.close()


def _expected(data: bytes) -> list[tuple]:
    return [(e.number, e.text) for e in notes.parse(data)]


def _found(md: Memoryd, words: list[str]) -> None:
    """Each note of words found by search under its number, and by recall."""
    for number, w in enumerate(words):
        assert f"note:{number}" in md.admin("search", {"query": w}), w
        assert f"The {w} note." in md.recall(w), w


@pytest.mark.parametrize("end", [b"\r", b"\r\n"])
def test_notes_with_cr_ends_are_indexed_by_the_catch_up_and_a_reindex(tmp_path, end):
    Memoryd(tmp_path / "home").close()  # a home laid out, its notes.md empty
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.write_bytes(_notes(WORDS, end))
    md = Memoryd(tmp_path / "home")  # its start catches notes.md up
    try:
        expected = _expected(path.read_bytes())
        assert len(expected) == len(WORDS)
        assert _rows(home.index_db) == expected
        _found(md, WORDS)
        md.index.reindex()
        assert _rows(home.index_db) == expected
        _found(md, WORDS)
    finally:
        md.close()


def test_notes_appended_with_cr_ends_are_indexed_by_the_next_catch_up(tmp_path):
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "note", "text": "The first note."})
        path = md.home.memory_file("notes.md")
        with path.open("ab") as f:
            f.write(_notes(WORDS, b"\r"))  # the owner's editor appended these
        md.index.catch_up_all()
        assert _rows(md.home.index_db) == _expected(path.read_bytes())
        for number, w in enumerate(WORDS, start=1):
            assert f"note:{number}" in md.admin("search", {"query": w}), w
    finally:
        md.close()


def test_a_cr_lf_whose_lf_follows_a_catch_up_is_one_line_end(tmp_path, caplog):
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    data = _notes(WORDS, b"\r\n")
    path.write_bytes(data[:-1])  # the last line's CR written, its LF not yet
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        assert _rows(home.index_db) == _expected(data)
        with path.open("ab") as f:
            f.write(b"\n" + _notes(["amber bead"], b"\r\n"))
        caplog.set_level(logging.WARNING)
        index.catch_up_all()
        assert _rows(home.index_db) == _expected(path.read_bytes())
        assert "indexing it again" not in caplog.text
    finally:
        index.close()


def test_a_note_longer_than_a_part_gathers_with_cr_ends_is_indexed(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(noteslong, "GATHER_LEAST", 1 << 16)
    monkeypatch.setattr(noteslong, "SCAN_BLOCK", 4096)
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    long = "\r".join(f"line {i} of a long paste" for i in range(20_000))
    data = (
        _notes(WORDS[:2], b"\r")
        + notes.noted(long, WHEN, "mm-1", "private", False).replace("\n", "\r").encode()
    )
    path.write_bytes(data)
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        rows = _rows(home.index_db)
        assert [n for n, _ in rows] == [0, 1, 2]
        assert rows[:2] == _expected(data)[:2]
        assert rows[2][1].startswith("line 0 of a long paste")
        with path.open("ab") as f:
            f.write(_notes(["amber bead"], b"\r"))
        caplog.set_level(logging.WARNING)
        index.catch_up_all()
        assert [n for n, _ in _rows(home.index_db)] == [0, 1, 2, 3]
        assert "indexing it again" not in caplog.text
    finally:
        index.close()


def test_a_damaged_header_between_cr_ended_notes_keeps_the_numbers(tmp_path, caplog):
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    data = _notes(WORDS[:3], b"\r").replace(b"2026-09-24T18:20Z", b"2026-02-30T18:20Z", 3)
    path.write_bytes(data.replace(b"2026-02-30T18:20Z", b"2026-09-24T18:20Z", 2))  # the third
    caplog.set_level(logging.WARNING)
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        assert [n for n, _ in _rows(home.index_db)] == [0, 1, 2]
        assert "note:2 is read as an untrusted note" in caplog.text
    finally:
        index.close()


def test_memoryds_own_note_after_cr_ended_notes_is_read_on_not_read_again(tmp_path, caplog):
    Memoryd(tmp_path / "home").close()
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.write_bytes(_notes(WORDS, b"\r"))
    md = Memoryd(tmp_path / "home")
    try:
        caplog.set_level(logging.WARNING)
        md.call({"action": "note", "text": "The amber bead note."})  # after an LF of its own
        assert _rows(home.index_db) == _expected(path.read_bytes())
        assert "note:5" in md.admin("search", {"query": "amber bead"})
        _found(md, WORDS)
        assert "indexing it again" not in caplog.text
    finally:
        md.close()
