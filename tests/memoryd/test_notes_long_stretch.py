"""A stretch of notes.md holding no header for far longer than a part reads (one huge pasted
note; a damaged tail of NUL bytes, no newline, that a truncate left) is not gathered whole on the
writer thread (index/noteslong.py): the long note is indexed as a reading in one piece indexes it
(its first max_record_bytes), the notes after it too, in bounded memory, and the stretch is said
in one line naming the file. A run of NUL bytes ending the file is passed over as a last line
still being written, without reading notes.md again from the start at each catch-up; the note
memoryd appends after it is found. In-process on a real home and a real index."""

import logging
import os
import random
import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index import noteslong
from memoryd.index.index import Index
from memoryd.journal import forgottenmarker
from memoryd.memory import notes
from tests.memoryd.test_notes_read_on import _note

LONG = 64 << 20  # far past what a part gathers (1 MiB), and what it holds meanwhile


def _rows(index: Path) -> list[tuple]:
    conn = sqlite3.connect(index)
    try:
        return conn.execute(
            "SELECT s.record, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE s.kind IN ('noted', 'moved', 'dropped') ORDER BY s.record"
        ).fetchall()
    finally:
        conn.close()


def _expected(data: bytes, cap: int = 65_536) -> list[tuple]:
    """The rows a reading in one piece gives (each text cut to its first cap bytes)."""
    entries = notes.parse(data)
    return [
        (e.number, e.text.encode()[:cap].decode("utf-8", "ignore"))
        for e in entries
        if e.text and not forgottenmarker.is_marker(e.text)
    ]


def _catch_up(home: Home, index: Index | None = None) -> int:
    """One catch-up as memoryd's writer runs it (on index, open, else on one opened and closed
    for it, as by a memoryd started for it); the peak of memory it took."""
    running = index is not None
    if index is None:
        index = Index(home)
        index.open()
    tracemalloc.start()
    try:
        index.catch_up_all()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        if not running:
            index.close()
    return peak


def _home(tmp_path: Path, data: bytes) -> tuple[Home, Path]:
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(data)
    path.chmod(0o600)
    return home, path


def test_a_huge_note_is_indexed_from_its_start_in_bounded_memory(tmp_path, caplog):
    line = b"a pasted log line of the build that failed on tuesday morning again " * 20 + b"\n"
    huge = _note(1, "start of the paste").encode() + line * (LONG // len(line))
    data = _note(0).encode() + huge + _note(2).encode() + _note(3).encode()
    home, path = _home(tmp_path, data)
    caplog.set_level(logging.WARNING)
    peak = _catch_up(home)
    assert peak < LONG // 4, f"the catch-up held {peak:,} bytes of a {LONG:,} byte note"
    assert _rows(home.index_db) == _expected(data)
    said = [r.getMessage() for r in caplog.records if "without a header" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"notes {path}: note:1 runs {len(huge):,} bytes")


def test_nul_bytes_ending_notes_md_are_passed_over_and_a_note_after_them_found(tmp_path, caplog):
    data = _note(0).encode() + _note(1).encode()
    home, path = _home(tmp_path, data)
    _catch_up(home)
    with path.open("ab") as f:  # what truncate -s leaves: NUL bytes, no newline
        f.truncate(len(data) + LONG)
    caplog.set_level(logging.WARNING)
    index = Index(home)
    index.open()
    try:
        peak = _catch_up(home, index)
        assert peak < LONG // 4, f"the catch-up held {peak:,} bytes of a {LONG:,} byte run"
        assert _rows(home.index_db) == _expected(data)
        said = [r.getMessage() for r in caplog.records if "no newline" in r.getMessage()]
        assert said == [
            f"notes {path}: bytes {len(data)} to {len(data) + LONG} hold no newline, longer than "
            "any line memoryd writes (a damaged stretch such as NUL bytes a truncate left?): "
            "passed over unread until a line ends it"
        ]
        caplog.clear()
        peak = _catch_up(home, index)  # nothing new: neither searched nor read again nor said
        assert peak < LONG // 4
        assert not [r for r in caplog.records if "indexing it again" in r.getMessage()]
        assert not [r for r in caplog.records if "no newline" in r.getMessage()]
        with path.open("ab") as f:  # memoryd's next note, on a line of its own
            f.write(b"\n" + _note(2, "the plumber comes on tuesday").encode())
        peak = _catch_up(home, index)
        assert peak < LONG // 4
    finally:
        index.close()
    rows = _rows(home.index_db)
    assert rows[-1] == (2, "the plumber comes on tuesday")


@pytest.mark.parametrize("block", [3, 4, 5, 7, 64])
def test_the_search_ends_the_stretch_where_notes_md_starts_the_next_entry(
    tmp_path, monkeypatch, block
):
    """Whatever falls on the blocks' edges (a "§" in UTF-8 cut in two, a \\r\\n, a one-byte
    encoding's "§", an escaped text line, NUL bytes), the search ends the stretch where a reading
    in one piece starts the next entry, and counts the lines before it."""
    monkeypatch.setattr(noteslong, "SCAN_BLOCK", block)
    rng = random.Random(block)
    head = _note(0, "").encode()[:-1]
    pieces = [b"x", b"\n", b"\r\n", b"\r", b"\xa7", b"\xc2", b"\\\xc2\xa7 no\n", b"\0"]
    path = tmp_path / "notes.md"
    for _ in range(80):
        body = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        after = rng.choice([_note(1).encode(), "§ not a header\n".encode(), b"\xa7 latin\n", b""])
        data = head + body + b"\n" + after + b"more\n"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            stretch = noteslong.reach(fd, noteslong.Scan.begin(fd, 0, len(head), None), _never)
        finally:
            os.close(fd)
        entries = notes.parse(data)
        assert (stretch.end if stretch.header else None) == (
            entries[1].start if len(entries) > 1 else None
        ), data
        assert stretch.lines == data.count(b"\n", len(head), stretch.end), data


def _never(_searched: int) -> bool:
    return False
