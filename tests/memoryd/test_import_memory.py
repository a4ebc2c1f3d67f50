"""An import holds a small multiple of its file, whatever its count of items: the items are
checked a line at a time and parsed again when taken, notes are counted by digest, and of the
report's lines only those the answer sends are kept."""

import json
import tracemalloc

import pytest

from memoryd.data import importing, importitems
from tests.memoryd.owner_data_harness import Memoryd

HEAD = {"format": "boxmaker-memory-export", "version": 1}
PROV = {
    "file": "notes.md",
    "session": "s1",
    "edit": None,
    "time": "2026-12-01T15:33:39Z",
    "class": "private",
    "untrusted": False,
}


def note(n: int) -> dict:
    item = {"kind": "note", "note": "noted", "number": n, "source": None, "text": f"n {n}"}
    return {**item, "provenance": PROV}


def export_of(count: int) -> bytes:
    lines = [HEAD, *(note(n) for n in range(count))]
    return ("\n".join(json.dumps(x) for x in lines) + "\n").encode()


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def hand(m: Memoryd, data: bytes, name: str = "in.jsonl") -> str:
    (m.home.root / "backups" / name).write_bytes(data)
    return name


def test_a_dry_run_holds_a_small_multiple_of_its_file(md):
    data = export_of(20_000)  # short notes, as many items as the bytes allow
    name = hand(md, data)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = json.loads(md.admin("import", {"name": name, "dry_run": True}))
        grew = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert (out["applied"], out["skipped"]) == (20_000, 0)
    assert grew < 3 * len(data), f"{grew:,} bytes held for a file of {len(data):,}"


def test_only_the_lines_sent_are_kept_and_the_rest_are_counted(md):
    out = json.loads(md.admin("import", {"name": hand(md, export_of(2_100)), "dry_run": True}))
    assert len(out["lines"]) == 2_000
    assert out["lines"][-1] == "line 2001: note 'n 1999': appended to notes.md"
    assert "(100 more lines not shown)" in out["message"]


@pytest.mark.parametrize(
    "text",
    [
        export_of(3).decode(),
        export_of(3).decode().rstrip("\n"),  # no newline at its end
        export_of(3).decode().replace("\n", "\n\n  \n", 2),  # blank lines between items
        export_of(3).decode().replace("\n", "\r\n"),
    ],
)
def test_items_taken_again_are_the_items_checked_with_their_line_numbers(text):
    lines = text.split("\n")
    expected = [
        (number, importitems.item_of(raw.encode()))
        for number, raw in enumerate(lines[1:], start=2)
        if raw.strip()
    ]
    items = importing.parse(text.encode())
    assert len(items) == 3
    assert list(items) == expected
    assert items[2] == expected[2]
