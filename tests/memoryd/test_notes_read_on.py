"""notes.md whose stat changed since the index read it, with no write of this memoryd to explain it
(a restart after memoryd was killed between a note's append and its catch-up, or the owner's
append): the same file, not shorter and still ending the bytes read as it did, is read on from
them (index/notesparts.py); a new file or changed bytes before the offset are read again from the
start, logged as changed outside memoryd. In-process on a real home and a real index."""

import logging
import os
import sqlite3
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.journal import forgotten
from memoryd.memory import notes

COUNT = 300


def _note(i: int, text: str | None = None) -> str:
    text = text or f"an ordinary note number {i} about the garden and the weekly shopping list"
    return f"§ noted 2026-11-{1 + i % 28:02d}T10:00Z in session s-old{i % 9} · private\n{text}\n"


def _rows(index: Path) -> list[tuple]:
    conn = sqlite3.connect(index)
    try:
        return conn.execute(
            "SELECT s.rowid, s.record, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE s.kind IN ('noted', 'moved', 'dropped') ORDER BY s.rowid"
        ).fetchall()
    finally:
        conn.close()


def _expected(path: Path) -> list[tuple]:
    entries = notes.parse(path.read_bytes())
    return [(e.number, e.text) for e in entries if e.text and not forgotten.is_marker(e.text)]


@pytest.fixture
def indexed(tmp_path) -> Home:
    """A home whose notes.md the index has read to its end, the index closed (memoryd gone)."""
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("".join(_note(i) for i in range(COUNT)))
    path.chmod(0o600)
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
    finally:
        index.close()
    return home


def _restart(home: Home, caplog) -> tuple[int, list[tuple]]:
    """A new memoryd's catch-up of notes.md, knowing no write of its own: (rows added, rows)."""
    index = Index(home)
    index.open()
    try:
        with caplog.at_level(logging.WARNING):
            added = index.catch_up_notes()
            while index.notes_behind is not None:
                added += index.catch_up_notes()
    finally:
        index.close()
    return added, _rows(home.index_db)


def _append(path: Path, text: str) -> None:
    with open(path, "a") as f:  # as memoryd appends a note, or the owner's `cat >>`
        f.write(text)


def test_a_note_appended_but_not_indexed_is_read_on_after_a_restart(indexed, caplog):
    path = indexed.memory_file("notes.md")
    before = _rows(indexed.index_db)
    _append(path, _note(COUNT, "the heron came back to the pond"))
    added, rows = _restart(indexed, caplog)
    assert "indexing it again" not in caplog.text
    assert added == 1
    assert rows[:-1] == before  # the earlier reading's rows kept, not deleted and read again
    assert [(r, t) for _, r, t in rows] == _expected(path)


def _in_place(path: Path, text: str) -> None:
    with open(path, "r+") as f:  # an editor that writes over the same file
        f.truncate(0)
        f.write(text)


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name("notes.md.edit")
    tmp.write_text(text)
    os.replace(tmp, path)  # an editor that saves a new file under the name


@pytest.mark.parametrize("save", [_in_place, _replace])
def test_a_hand_edit_before_the_offset_is_read_again_from_the_start(indexed, caplog, save):
    """The last note's words changed (its length kept), and a note appended: another reading
    than the index's, whatever memoryd appended after it."""
    path = indexed.memory_file("notes.md")
    text = path.read_text().replace("number 299 about the garden", "number 299 about the herons")
    save(path, text + _note(COUNT, "the otter came too"))
    added, rows = _restart(indexed, caplog)
    assert "changed outside memoryd: indexing it again" in caplog.text
    assert added == COUNT + 1
    assert [(r, t) for _, r, t in rows] == _expected(path)
    assert any("about the herons" in t for _, _, t in rows)


def test_a_shorter_notes_md_is_read_again_from_the_start(indexed, caplog):
    path = indexed.memory_file("notes.md")
    _in_place(path, "".join(_note(i) for i in range(COUNT - 1)))
    added, rows = _restart(indexed, caplog)
    assert "changed outside memoryd: indexing it again" in caplog.text
    assert [(r, t) for _, r, t in rows] == _expected(path) and len(rows) == COUNT - 1


def test_an_edit_in_place_far_before_the_offset_is_read_again(tmp_path, caplog):
    """An editor that writes over notes.md with as many bytes, further back than the tail window
    the index keeps: not an append (the file did not grow), so it is read again from the start."""
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    many = 1_500  # about 150 KB, past the tail window
    path.write_text("".join(_note(i) for i in range(many)))
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
    finally:
        index.close()
    text = path.read_text().replace("number 3 about the garden", "number 3 about the herons")
    _in_place(path, text)
    _, rows = _restart(home, caplog)
    assert "changed outside memoryd: indexing it again" in caplog.text
    assert any("number 3 about the herons" in t for _, _, t in rows)
    assert [(r, t) for _, r, t in rows] == _expected(path)
