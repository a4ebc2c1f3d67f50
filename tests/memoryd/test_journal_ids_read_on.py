"""show, undo and log cost what the journal gained, not all of it: whether an id is held on two
lines is asked of the ids kept per month file (journal/heldids.py), read on only as far as the
months grew; an id a line appended or pasted by hand holds twice is still refused."""

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal import heldids, twice
from tests.memoryd.owner_data_harness import Memoryd

DAY = "2026-09-24"


def _id(n: int) -> str:
    return f"{DAY}-{n:04d}"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _month(md: Memoryd):
    return md.home.edits / f"{DAY[:7]}.jsonl"


def test_show_undo_and_log_read_only_the_lines_appended_since(md, monkeypatch):
    for n in range(1, 31):
        md.call({"action": "add", "file": "memory", "text": f"Entry number {n}."})
    assert md.admin("show", {"id": _id(1)}).startswith(f"edit {_id(1)}")
    since = _month(md).stat().st_size
    read: list[int] = []
    scan_on, windows = heldids._scan, twice._windows

    def counted_scan(f, start, size, ids):
        read.append(size - start)
        return scan_on(f, start, size, ids)

    def counted_windows(data):
        read.append(len(data))
        yield from windows(data)

    monkeypatch.setattr(heldids, "_scan", counted_scan)
    monkeypatch.setattr(twice, "_windows", counted_windows)
    md.call({"action": "add", "file": "memory", "text": "Entry number 31."})
    assert md.admin("show", {"id": _id(31)}).startswith(f"edit {_id(31)}")
    assert md.admin("undo", {"id": _id(31)}).startswith(f"undid {_id(31)}")
    assert "held by" not in md.admin("log", {"n": 10})
    assert md.admin("show", {"id": _id(2)}).startswith(f"edit {_id(2)}")
    assert sum(read) == _month(md).stat().st_size - since  # the two lines appended, no more


def test_a_line_appended_by_hand_with_an_id_held_is_refused_after_a_read_on(md):
    for n in range(1, 4):
        md.call({"action": "add", "file": "memory", "text": f"Entry number {n}."})
    assert md.admin("show", {"id": _id(2)}).startswith(f"edit {_id(2)}")
    month = _month(md)
    second = month.read_bytes().split(b"\n")[1]
    with open(month, "ab") as f:
        f.write(second + b"\n")  # a line copied to the end by hand
    for command in ("show", "undo"):
        with pytest.raises(AdminRefused, match=f"edit {_id(2)} is held by 2 journal lines"):
            md.admin(command, {"id": _id(2)})
    assert f"edit {_id(2)} is held by 2 journal lines ({month} line 2 and line 4)" in md.admin(
        "log", {"n": 10}
    )
    assert md.admin("show", {"id": _id(3)}).startswith(f"edit {_id(3)}")
