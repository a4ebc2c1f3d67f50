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
from memoryd.journal import forgottenmarker
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
    return [(e.number, e.text) for e in entries if e.text and not forgottenmarker.is_marker(e.text)]


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


def _many(tmp_path, count: int = 1_500) -> Home:
    """A home of about 150 KB of notes (past the tail window), read to its end, memoryd gone."""
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("".join(_note(i) for i in range(count)))
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
    finally:
        index.close()
    return home


def test_an_edit_in_place_far_back_with_an_append_is_read_again(tmp_path, caplog):
    """While memoryd is stopped, the owner writes over a note far back with as many bytes and
    appends an entry: the file only grew and ends as the index read it, as after memoryd's own
    append that a kill cut off, but bytes the index read changed: read again from the start."""
    home = _many(tmp_path)
    path = home.memory_file("notes.md")
    text = path.read_text().replace("number 3 about the garden", "number 3 about the herons")
    with open(path, "r+") as f:  # nano, vim with backupcopy=yes: the same file, written over
        f.write(text)
    _append(path, _note(1_500, "the staging cluster lives in rack B7"))
    added, rows = _restart(home, caplog)
    assert "changed outside memoryd: indexing it again" in caplog.text
    assert added == 1_501
    assert any("number 3 about the herons" in t for _, _, t in rows)
    assert not any("number 3 about the garden" in t for _, _, t in rows)
    assert [(r, t) for _, r, t in rows] == _expected(path)


def test_notes_appended_and_read_in_parts_are_still_read_on_after_a_kill(
    tmp_path, caplog, monkeypatch
):
    """The digest of the bytes read follows the index as it reads on, a few notes a part and a
    note at a time as memoryd appends them: a note whose catch-up a kill cut off is still read
    on at the next start, the rows read before kept."""
    monkeypatch.setattr("memoryd.index.indexer.PART_RECORDS", 7)
    home = _many(tmp_path)
    path = home.memory_file("notes.md")
    index = Index(home)
    index.open()
    try:
        for i in range(1_500, 1_540):
            own_from = index.notes_file()
            _append(path, _note(i, f"note {i} of the running memoryd, past a block or two " * 40))
            index.catch_up_notes(own_from)
            while index.notes_behind is not None:
                index.catch_up_notes()
    finally:
        index.close()
    before = _rows(home.index_db)
    _append(path, _note(1_540, "the heron came back to the pond"))  # the kill came before its read
    added, rows = _restart(home, caplog)
    assert "indexing it again" not in caplog.text
    assert added == 1
    assert rows[:-1] == before
    assert [(r, t) for _, r, t in rows] == _expected(path)


def test_an_index_keeping_no_digest_reads_notes_md_again_after_a_kill(tmp_path, caplog):
    """An index written before the digest was kept cannot show that the bytes read are unchanged:
    a notes.md that grew while memoryd was stopped is read again from the start, once."""
    home = _many(tmp_path)
    conn = sqlite3.connect(home.index_db)
    try:
        with conn:
            (tail,) = conn.execute(
                "SELECT tail FROM offsets WHERE log = 'memory/notes.md'"
            ).fetchone()
            assert len(tail.split(" ")) == 3
            conn.execute(
                "UPDATE offsets SET tail = ? WHERE log = 'memory/notes.md'",
                (" ".join(tail.split(" ")[:2]),),
            )
    finally:
        conn.close()
    path = home.memory_file("notes.md")
    _append(path, _note(1_500, "the heron came back to the pond"))
    added, rows = _restart(home, caplog)
    assert "changed outside memoryd: indexing it again" in caplog.text
    assert added == 1_501
    assert [(r, t) for _, r, t in rows] == _expected(path)
    caplog.clear()
    _append(path, _note(1_501, "and the otter"))  # the digest is kept from this reading on
    added, _ = _restart(home, caplog)
    assert "indexing it again" not in caplog.text and added == 1
