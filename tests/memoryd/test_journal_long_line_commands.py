"""The owner's commands that read a journal month (log, log --from, show, undo's check of an id held
twice, a hand edit's look at the journal, an import's search of it) never take a line longer than
any memoryd writes (a run of NUL bytes a power cut left, a file copied over a month) whole: it is
read as its first bytes, as the start reads it (wholelines.py), and is still one damaged line with
its number; the lines around it read as they are.

The bound is made small here (mapfile.LONG_LINE), so that a month a few hundred kilobytes long
holds a line past it; every slice a reader takes of the month is watched."""

import json
from pathlib import Path

import pytest

from memoryd.data import importentry, importsame
from memoryd.journal import damaged, mapfile, scan, twice
from memoryd.journal.journal import EditLine
from memoryd.memory import handclass, notes

BOUND = 10_000
LONG = 30 * BOUND


def line(n: int, **more) -> bytes:
    record = {
        "id": f"2026-12-05-{n:04d}",
        "time": "2026-12-05T10:00:00Z",
        "session": "s1",
        "action": "add",
        "to": "memory.md",
        "before": [],
        "after": [f"entry {n}"],
        **more,
    }
    return json.dumps(record).encode() + b"\n"


NULS = b"\0" * LONG + b"\n"  # line 3
# line 5: as memoryd writes a line, but far too long for one (its text holds "kept text")
TOO_LONG = line(5, after=["kept text", "y" * LONG])
# line 7 holds line 2's id again (a journal concatenated by hand)
LINES = [line(1), line(2), NULS, line(4), TOO_LONG, line(6), line(2)]


@pytest.fixture
def month(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setattr(mapfile, "LONG_LINE", BOUND)
    monkeypatch.setattr(mapfile, "HEAD", 100)
    monkeypatch.setattr(scan, "WINDOW", 1_000)
    monkeypatch.setattr(damaged, "COUNT_STEP", 1_000)
    path = tmp_path / "2026-12.jsonl"
    path.write_bytes(b"".join(LINES))
    return path


@pytest.fixture
def longest(monkeypatch) -> list[int]:
    """The longest slice any reader took of a month, in bytes."""
    seen = [0]
    slice_of = mapfile.FileView.__getitem__

    def watched(self, index):
        got = slice_of(self, index)
        if isinstance(got, bytes):
            seen[0] = max(seen[0], len(got))
        return got

    monkeypatch.setattr(mapfile.FileView, "__getitem__", watched)
    return seen


def offset(number: int) -> int:
    return sum(len(x) for x in LINES[: number - 1])


def ids(records) -> list[str]:
    return [r.id for r in records]


def said(skipped: list[damaged.Damaged]) -> list[tuple[int, str | None, bool]]:
    return [(d.number, d.id, d.torn) for d in skipped]


def test_log_lists_the_lines_around_and_names_each_long_line_damaged(month, longest):
    skipped: list[damaged.Damaged] = []
    listed = scan.tail([month], 10, skipped)
    assert ids(listed) == [f"2026-12-05-{n:04d}" for n in (1, 2, 4, 6, 2)]
    assert sorted(said(skipped)) == [(3, None, True), (5, "2026-12-05-0005", False)]
    assert [d.why for d in skipped if not d.torn] == [damaged.too_long()]
    assert longest[0] < BOUND


def test_log_from_an_id_reads_past_the_long_lines(month, longest):
    skipped: list[damaged.Damaged] = []
    listed = scan.from_id([month], "2026-12-05-0001", 10, skipped)
    assert listed is not None and ids(listed)[2:] == ["2026-12-05-0004", "2026-12-05-0006"] + [
        "2026-12-05-0002"
    ]
    assert said(skipped) == [(3, None, True), (5, "2026-12-05-0005", False)]
    assert longest[0] < BOUND


def test_show_of_the_long_line_names_it_damaged(month, longest):
    assert scan.line_with_id(month, "2026-12-05-0005") is None
    assert scan.line_at(month, offset(5)) is None
    found = damaged.find(month, "2026-12-05-0005", EditLine)
    assert found is not None and (found.number, found.why) == (5, damaged.too_long())
    shown = scan.line_with_id(month, "2026-12-05-0006")
    assert shown is not None and shown.after == ["entry 6"]
    assert [r.id for _, _, r in scan.lines_to([month], "memory.md")][:2] == [
        "2026-12-05-0002",
        "2026-12-05-0006",
    ]
    assert longest[0] < BOUND


def test_undo_finds_an_id_held_twice_past_the_long_lines(month, longest):
    places = twice.held([month], "2026-12-05-0002")
    assert [(p.number, p.offset) for p in places] == [(2, offset(2)), (7, offset(7))]
    assert [p.number for p in twice.held([month], "2026-12-05-0005")] == [5]
    assert [p.number for p in twice.held([month], "2026-12-05-0006")] == [6]
    counted = twice.counts([month])
    assert counted["2026-12-05-0002"] == 2 and counted["2026-12-05-0005"] == 1
    assert longest[0] < BOUND


def test_a_hand_edit_and_an_import_pass_the_long_line_unread(month, longest):
    found, _, _ = handclass._after([month], "memory.md", "2026-12-05-0004")
    assert found is not None and (found.number, found.id) == (5, "2026-12-05-0005")
    assert importentry.entry_write(None, [month], "memory.md", "kept text") is None  # type: ignore[arg-type]
    note = notes.NoteEntry(1, "noted", "2026-12-05T10:00Z", "s1", None, "private", False, "x", 0, 1)
    assert importsame.recorded(None, [month], note) is None  # type: ignore[arg-type]
    assert longest[0] < BOUND
