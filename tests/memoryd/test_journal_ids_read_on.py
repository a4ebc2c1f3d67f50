"""show, undo and log cost what the journal gained, not all of it: whether an id is held on two
lines is asked of the ids kept per month file (journal/heldids.py), read on only as far as the
months grew; an id a line appended or pasted by hand holds twice is still refused."""

import json

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


def test_a_start_reads_the_journals_ids_from_their_saved_copy_on(md, monkeypatch, caplog):
    for n in range(1, 6):
        md.call({"action": "add", "file": "memory", "text": f"Entry number {n}."})
    heldids._journals.clear()
    heldids.keep_saved(md.home)  # as a start does: read, then saved
    saved = md.home.index_dir / "journal-ids.json"
    assert saved.exists() and b"Entry" not in saved.read_bytes()
    assert saved.stat().st_mode & 0o777 == 0o600
    since = _month(md).stat().st_size
    md.call({"action": "add", "file": "memory", "text": "Entry number 6."})
    read: list[int] = []
    scan_on = heldids._scan

    def counted_scan(f, start, size, ids):
        read.append(size - start)
        return scan_on(f, start, size, ids)

    monkeypatch.setattr(heldids, "_scan", counted_scan)
    heldids._journals.clear()  # memoryd restarted
    heldids.keep_saved(md.home)
    assert sum(read) == _month(md).stat().st_size - since  # the line appended since, no more
    assert md.admin("show", {"id": _id(6)}).startswith(f"edit {_id(6)}")
    # a damaged copy, or one of another journal, costs a read of the months, never an answer
    saved.write_bytes(b'{"format": 1, "months": [{"name": "x"}]}')
    heldids._journals.clear()
    read.clear()
    heldids.keep_saved(md.home)
    assert sum(read) == _month(md).stat().st_size
    assert "journal-ids.json: not usable" in caplog.text
    first = _month(md).read_bytes().split(b"\n")[0]
    _month(md).write_bytes(_month(md).read_bytes() + first + b"\n")
    heldids._journals.clear()
    with pytest.raises(AdminRefused, match=f"edit {_id(1)} is held by 2 journal lines"):
        md.admin("show", {"id": _id(1)})


def test_an_id_written_in_another_form_is_another_id(md):
    for n in range(1, 3):
        md.call({"action": "add", "file": "memory", "text": f"Entry number {n}."})
    month = _month(md)
    first = month.read_bytes().split(b"\n")[0]
    padded = first.replace(_id(1).encode(), f"{DAY}-00001".encode(), 1)
    with open(month, "ab") as f:
        f.write(padded + b"\n" + padded + b"\n")  # pasted twice by hand, the number padded
    assert md.admin("show", {"id": _id(1)}).startswith(f"edit {_id(1)}")
    text = md.admin("log", {"n": 10})
    assert f"edit {DAY}-00001 is held by 2 journal lines ({month} line 3 and line 4)" in text
    assert f"edit {_id(1)} is held" not in text
    md.call({"action": "add", "file": "memory", "text": "Entry number 3."})
    ids = [json.loads(raw)["id"] for raw in month.read_bytes().split(b"\n") if raw]
    assert ids[:4] == [_id(1), _id(2), f"{DAY}-00001", f"{DAY}-00001"]
    assert len(set(ids[4:])) == len(ids[4:]) and min(ids[4:]) == _id(3)  # no id given again
