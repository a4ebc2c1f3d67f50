"""An import's check of the edits its items name costs the journal read about once, not once an
item: another home's export names ids this journal does not hold (each was a search of the whole
month from its end), and an id held where halving misses it (the clock went back) is found by
one read of its month for all the file's ids. The lines found are the ones the ids name."""

import json

import pytest

from memoryd.data import importnamed
from memoryd.data.importclaim import Claims
from memoryd.data.importitems import item_of
from memoryd.home import Home
from memoryd.journal import mapfile

MONTH = "2026-11"
LINES = 600
PAD = "x" * 2_000  # a line of about 2 KB, as an identity edit's before and after make them
ITEMS = 200


def line(edit: str, text: str) -> str:
    return json.dumps(
        {
            "id": edit,
            "time": f"{MONTH}-01T00:00:00Z",
            "session": "s1",
            "call": "c",
            "taint": "private",
            "untrusted": True,
            "action": "note",
            "file": None,
            "to": "notes.md",
            "before": [PAD],
            "after": [PAD],
            "notes": [{"kind": "noted", "text": text}],
        }
    )


@pytest.fixture
def home(tmp_path):
    h = Home(tmp_path / "home")
    h.edits.mkdir(parents=True)
    h.memory_file("notes.md").write_text("")
    return h


def write_month(home: Home, numbers: list[int]) -> int:
    path = home.edits / f"{MONTH}.jsonl"
    path.write_text("".join(line(f"{MONTH}-01-{n:06d}", f"fact {n}") + "\n" for n in numbers))
    return path.stat().st_size


def note(edit: str, text: str) -> str:
    prov = {
        "file": "notes.md",
        "session": "elsewhere",
        "edit": edit,
        "time": f"{MONTH}-01T00:00:00Z",
    }
    prov |= {"class": "private", "untrusted": False}
    return json.dumps({"kind": "note", "note": "noted", "text": text, "provenance": prov})


@pytest.fixture
def read_bytes(monkeypatch):
    counted = [0]
    real = mapfile.FileView._read

    def counting(self, start: int, end: int) -> bytes:
        got = real(self, start, end)
        counted[0] += len(got)
        return got

    monkeypatch.setattr(mapfile.FileView, "_read", counting)
    return counted


def claims_of(home: Home, items: list[str]) -> tuple[Claims, list]:
    parsed = [item_of(raw.encode()) for raw in items]
    edits = {i.provenance.edit for i in parsed}
    return Claims(home, (i.text for i in parsed), edits), parsed


def test_ids_of_another_home_cost_no_read_of_the_journal_per_item(home, read_bytes):
    size = write_month(home, list(range(1, LINES + 1)))
    # ids past every id of the month: halving misses them, and they are none of this journal's
    items = [note(f"{MONTH}-01-{900_000 + n:06d}", f"imported fact {n}") for n in range(ITEMS)]
    claims, parsed = claims_of(home, items)
    read_bytes[0] = 0
    for item in parsed:
        checked, why = claims.check(item)
        assert why is None and checked == item  # imported as it claims
    assert read_bytes[0] < 2 * size, f"{read_bytes[0]:,} bytes read of a {size:,}-byte journal"


def test_held_ids_where_halving_misses_are_found_by_one_read_of_the_month(home, read_bytes):
    # the clock went back: ids fall along the month, so halving cannot find them
    numbers = list(range(LINES, 0, -1))
    size = write_month(home, numbers)
    named = [1 + 3 * n for n in range(ITEMS)]
    items = [note(f"{MONTH}-01-{n:06d}", f"fact {n}") for n in named]
    claims, parsed = claims_of(home, items)
    read_bytes[0] = 0
    for n, item in zip(named, parsed, strict=True):
        checked, why = claims.check(item)
        assert checked.provenance.untrusted is True, n  # the journal's label, stricter
        assert why is not None and f"edit {MONTH}-01-{n:06d}" in why
    assert read_bytes[0] < 3 * size, f"{read_bytes[0]:,} bytes read of a {size:,}-byte journal"


def test_a_line_appended_after_the_month_was_read_is_found(home):
    write_month(home, [5, 4, 3])
    lookup = importnamed.Named(home, {f"{MONTH}-01-000004", f"{MONTH}-01-000009"})
    assert lookup.line(f"{MONTH}-01-000004").id == f"{MONTH}-01-000004"
    assert lookup.line(f"{MONTH}-01-000009") is None
    with open(home.edits / f"{MONTH}.jsonl", "a") as f:
        f.write(
            line(f"{MONTH}-01-000009", "fact 9") + "\n" + line(f"{MONTH}-01-000001", "x") + "\n"
        )
    lookup.refresh()
    assert lookup.line(f"{MONTH}-01-000009").id == f"{MONTH}-01-000009"
    assert lookup.line(f"{MONTH}-01-000001") is None  # not an id the import names
