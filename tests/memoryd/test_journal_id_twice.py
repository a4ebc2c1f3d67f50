"""An edit id the journal holds on two lines (an id changed by hand, two journals concatenated):
show and undo refuse it in one line naming the journal lines that hold it, and undo changes
nothing (it must never revert an edit other than the one the owner saw under the id); log says the
id is held twice; restore takes such an archive and says so (journal/twice.py)."""

import json
import os
import shutil

import pytest

from memoryd.data import layout
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

DAY = "2026-09-24"
ONE, TWO, THREE = (f"{DAY}-{n:04d}" for n in (1, 2, 3))


def _month(md: Memoryd):
    return md.home.edits / f"{DAY[:7]}.jsonl"


def _edits(md: Memoryd) -> None:
    """Three edits of memory.md: add one, add two, remove two (the file's latest)."""
    md.call({"action": "add", "file": "memory", "text": "Entry one."})
    md.call({"action": "add", "file": "memory", "text": "Entry two."})
    md.call({"action": "remove", "file": "memory", "old": "Entry two."})


def _rename(md: Memoryd, number: int, old: str, new: str) -> None:
    """The journal's line number (from 1) given the id new instead of old, by hand."""
    path = _month(md)
    lines = path.read_bytes().split(b"\n")
    assert lines[number - 1].startswith(f'{{"id": "{old}"'.encode())
    lines[number - 1] = lines[number - 1].replace(old.encode(), new.encode(), 1)
    path.write_bytes(b"\n".join(lines))


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_show_and_undo_refuse_an_id_two_lines_hold_naming_them(md):
    _edits(md)
    _rename(md, 3, THREE, ONE)  # the removal of Entry two now says it is edit ONE
    path = md.home.memory_file("memory.md")
    before = path.read_bytes()
    lines = len(md.store.journal.records())
    for command in ("show", "undo"):
        with pytest.raises(AdminRefused) as refused:
            md.admin(command, {"id": ONE})
        said = str(refused.value)
        assert "\n" not in said
        assert f"edit {ONE} is held by 2 journal lines ({_month(md)} line 1 and line 3)" in said
    assert path.read_bytes() == before  # undo reverted nothing: not the add, not the removal
    assert len(md.store.journal.records()) == lines
    # the other edits are shown and undone as before; the file's latest is the one held twice
    assert md.admin("show", {"id": TWO}).startswith(f"edit {TWO}")
    with pytest.raises(
        AdminRefused, match=f"not the latest edit of memory.md .the latest is {ONE}"
    ):
        md.admin("undo", {"id": TWO})


def test_log_says_which_ids_it_lists_two_lines_hold(md):
    _edits(md)
    _rename(md, 3, THREE, ONE)
    text = md.admin("log", {"n": 10})
    assert (
        f"(edit {ONE} is held by 2 journal lines ({_month(md)} line 1 and line 3): show and undo "
        "refuse that id until one line holds it)"
    ) in text
    # the last line alone: its other line is outside the window, and it is still said
    assert f"edit {ONE} is held by 2 journal lines" in md.admin("log", {"n": 1})
    listed = json.loads(md.admin("log", {"n": 10, "json": True}))
    assert listed["twice"] == [
        {"id": ONE, "lines": [{"file": str(_month(md)), "line": n} for n in (1, 3)]}
    ]


def test_a_journal_concatenated_onto_another_month_is_refused_naming_both_files(md):
    _edits(md)
    other = md.home.edits / "2026-10.jsonl"
    first = _month(md).read_bytes().split(b"\n")[0]
    other.write_bytes(first + b"\n")  # a month's line pasted into another month's file
    with pytest.raises(AdminRefused) as refused:
        md.admin("show", {"id": ONE})
    assert f"({_month(md)} line 1 and {other} line 1)" in str(refused.value)


def test_an_id_one_line_holds_is_shown_and_undone_as_before(md):
    _edits(md)
    assert md.admin("show", {"id": ONE}).startswith(f"edit {ONE}")
    assert md.admin("undo", {"id": THREE}).startswith(f"undid {THREE}")
    assert "Entry two." in md.home.memory_file("memory.md").read_text()
    assert "held by" not in md.admin("log", {"n": 10})


def test_restore_takes_an_archive_holding_an_id_twice_and_says_so(md):
    _edits(md)
    _rename(md, 3, THREE, ONE)
    made = md.data("backup")["path"]
    shutil.move(made, layout.backups(md.home) / "twice.tar.gz")
    out = md.data("restore", name="twice.tar.gz", replace=True)
    said = json.dumps(out)
    assert (
        f"the archive's journal holds 1 edit id on more than one line (edit {ONE} on "
        "memory/edits/2026-09.jsonl line 1 and line 3)"
    ) in said
    assert os.path.exists(_month(md))
    with pytest.raises(AdminRefused, match=f"edit {ONE} is held by 2 journal lines"):
        md.admin("undo", {"id": ONE})
