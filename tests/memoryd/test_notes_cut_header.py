"""Where a part of notes.md's catch-up stops gathering (noteslong.gather_bound) may fall inside a
header line. Entries come only from whole lines: a cut header is not counted as an entry of its
own, so the notes after text before the first header keep the numbers notes.md gives them
(memory/notes.py: parse), which search prints and forget takes. And a catch-up that starts before
a run with no newline ending the file (NUL bytes a truncate left) names that run once, not the
last note before it. Catch-up in parts, a new index's reading and a whole parse agree for any
file cut anywhere. In-process on a real home and a real index."""

import logging
import os
import random
import sqlite3
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index import noteslong, notesparts
from memoryd.index.index import Index
from memoryd.journal import forgottenmarker
from memoryd.memory import notes

CAP = 100


def _note(i: int, text: str) -> bytes:
    header = f"§ noted 2026-11-{1 + i % 28:02d}T10:00Z in session s-old{i % 9} · private"
    return f"{header}\n{text}\n".encode()


def _rows(index: Path) -> list[tuple]:
    conn = sqlite3.connect(index)
    try:
        found = conn.execute(
            "SELECT s.record, CAST(h.text AS BLOB) FROM sources s JOIN hits h"
            " ON h.rowid = s.rowid WHERE s.kind IN ('noted', 'moved', 'dropped') ORDER BY s.record"
        ).fetchall()
        return [(n, text.decode()[:CAP]) for n, text in found]  # NUL bytes and all
    finally:
        conn.close()


def _expected(data: bytes) -> list[tuple]:
    return [
        (e.number, e.text[:CAP])
        for e in notes.parse(data)
        if e.text and not forgottenmarker.is_marker(e.text)
    ]


def _home(tmp_path: Path, data: bytes = b"") -> tuple[Home, Path]:
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o600)
    return home, path


def _read_anew(home: Home) -> list[tuple]:
    """The rows a new index gives (the old one deleted: a reindex)."""
    for p in home.index_db.parent.glob(home.index_db.name + "*"):
        p.unlink()
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
    finally:
        index.close()
    return _rows(home.index_db)


def test_text_before_the_first_header_cut_at_the_gather_bound_keeps_the_numbers(tmp_path):
    bound = noteslong.gather_bound(65_536)
    # What a part holds when it reaches the bound: READ_BLOCK, doubled each read, up to bound.
    gathered, want = 0, notesparts.READ_BLOCK
    while gathered < bound:
        gathered += want
        want = min(want * 2, bound)
    line = b"pasted text above the first header, which belongs to no note\n"
    lead = line * ((gathered - 20) // len(line))
    lead += b"-" * (gathered - 20 - len(lead) - 1) + b"\n"  # the bound is 20 bytes into a header
    data = lead + b"".join(
        _note(i, w) for i, w in enumerate(["zanzibarx", "quixotry", "wombatflour"])
    )
    home, _ = _home(tmp_path, data)
    expected = _expected(data)
    assert [n for n, _ in expected] == [0, 1, 2]
    assert _read_anew(home) == expected


@pytest.fixture
def small_parts(monkeypatch):
    """A part gathers 300 bytes and searches 7 at a time, so that short files cut everywhere."""
    monkeypatch.setattr(noteslong, "gather_bound", lambda _: 300)
    monkeypatch.setattr(noteslong, "SCAN_BLOCK", 7)
    monkeypatch.setattr(notesparts, "READ_BLOCK", 16)
    stops = random.Random(5)
    over = notesparts._over
    monkeypatch.setattr(notesparts, "_over", lambda *a: stops.random() < 0.3 or over(*a))


def _a_file(rng: random.Random) -> bytes:
    end = rng.choice([b"\n", b"\n", b"\r\n"])
    pieces = []
    if rng.random() < 0.5:
        pieces.append(b"leading text" * rng.randint(0, 4) + end)
        pieces.append((b"x" * rng.randint(0, 40) + end) * rng.randint(0, 20))
    for i in range(rng.randint(1, 6)):
        body = rng.choice(
            [
                f"short note {i}",
                "long line " * rng.randint(10, 60),
                "§ damaged header",
                "word " * 20 + "\n" + "more " * rng.randint(0, 80),
            ]
        )
        pieces.append(_note(i, body).replace(b"\n", end))
        if rng.random() < 0.1:
            pieces.append(b"\0" * rng.randint(1, 400) + end)
    if rng.random() < 0.2:
        pieces.append(b"\0" * rng.randint(1, 700))  # a run that no newline ends
    return b"".join(pieces)


def _catch_up_appending(home: Home, path: Path, data: bytes, rng: random.Random) -> None:
    """data appended to notes.md in pieces cut anywhere, the index catching up in parts between."""
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 6))))
    index = Index(home)
    index.open()
    try:
        done = 0
        for cut in [*cuts, len(data)]:
            with path.open("ab") as f:
                f.write(data[done:cut])
            done = cut
            for _ in range(rng.randint(0, 3)):
                index.catch_up_notes()
        index.catch_up_all()
    finally:
        index.close()


def test_catch_up_in_parts_a_new_index_and_a_whole_parse_agree(tmp_path, small_parts):
    rng = random.Random(28)
    for seed in range(60):
        data = _a_file(rng)
        home, path = _home(tmp_path / str(seed))
        _catch_up_appending(home, path, data, rng)
        caught = _rows(home.index_db)
        assert caught == _read_anew(home), (seed, data)
        # A last line with no LF is still being written (an entry may go on in it): memoryd's
        # next append puts an LF first, and then every entry is whole.
        _catch_up_appending(home, path, b"\n", rng)
        expected = _expected(data + b"\n")
        assert _rows(home.index_db) == expected, (seed, data)
        assert _read_anew(home) == expected, (seed, data)
        assert [n for n, _ in caught] == [n for n, _ in expected][: len(caught)], (seed, data)


def test_a_run_with_no_newline_after_the_notes_read_from_the_start_is_named_once(tmp_path, caplog):
    data = _note(0, "first note alpha") + _note(1, "second note bravo")
    home, path = _home(tmp_path, data)
    tail = 4 << 20  # past what a part gathers
    with path.open("ab") as f:
        f.truncate(len(data) + tail)
    caplog.set_level(logging.WARNING)
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        index.catch_up_all()  # nothing new: said no more
    finally:
        index.close()
    said = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert said == [
        f"notes {path}: bytes {len(data)} to {len(data) + tail} hold no newline, longer than any "
        "line memoryd writes (a damaged stretch such as NUL bytes a truncate left?): passed over "
        "unread until a line ends it"
    ]
    assert _rows(home.index_db) == _expected(data)
    assert os.path.getsize(path) == len(data) + tail
