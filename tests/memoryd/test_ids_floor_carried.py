"""The numbers only index/ids-handed-out.json (the floor) gives as handed out are kept in
memory/.ids.json's floor_only as soon as they are read, and carried into a restore's staged
.ids.json: a start with no write followed by index/ removed, or a restore after memory/ was
removed whole (whose lines are appended through Journals of their own), never hands out again an
id handed out before. A number memoryd cannot have handed out (a damaged floor) is never written,
and no number the floor alone gives is written as .ids.json's own."""

import json
import logging
import os
import shutil

from memoryd.home import Home
from memoryd.journal import idform, ids
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

DAY = "2026-09-24"


def _start(root, clock=None, review: bool = False) -> Memoryd:
    md = Memoryd(root, clock=clock or Clock())
    md.store.review_on = review
    return md


def _edit_ids(md: Memoryd) -> list[tuple[str, str]]:
    edits = json.loads(md.admin("log", {"n": 50, "json": True}))["edits"]
    return [(e["id"], e["action"]) for e in edits]


def test_a_restore_after_memory_removed_whole_goes_on_after_every_edit_id(tmp_path, caplog):
    root, clock = tmp_path / "home", Clock()
    md = _start(root, clock)
    for n in range(2):
        md.call({"action": "add", "file": "user", "text": f"Fact {n} here."})
    made = md.data("backup")["path"]
    for n in range(2, 4):
        md.call({"action": "add", "file": "user", "text": f"Fact {n} here."})
    md.close()
    shutil.rmtree(md.home.memory)
    md = _start(root, clock)
    try:
        md.data("restore", name=os.path.basename(made), replace=True)
        restored = [i for i, action in _edit_ids(md) if action == "restore"]
        assert restored == [f"{DAY}-0005"]
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            md.call({"action": "add", "file": "user", "text": "After the restore."})
        assert _edit_ids(md)[-1] == (f"{DAY}-0006", "add")
        assert not [r for r in caplog.records if "no longer holds" in r.getMessage()]
    finally:
        md.close()


def _homes(tmp_path) -> tuple[Home, Home]:
    live, staged = Home(tmp_path / "live"), Home(tmp_path / "staged")
    for folder in (live.index_dir, staged.memory):
        folder.mkdir(parents=True)
    return live, staged


def test_carried_floor_numbers_count_for_every_journal_of_the_staged_home(tmp_path):
    live, staged = _homes(tmp_path)  # live: memory/ removed whole, the floor left
    floor = live.index_dir / ids.FLOOR_NAME
    floor.write_text(json.dumps({"edit": {DAY: 4}, "pending": {DAY: 2}}))
    ids.Issued(live).carry_to(ids.Issued(staged))
    assert not live.memory.exists()  # nothing made where memory/ is gone
    kept = json.loads((staged.memory / ".ids.json").read_text())
    assert kept["floor_only"] == {"edit": {DAY: [[0, 4]]}, "pending": {DAY: [[0, 2]]}}
    assert "edit" not in kept and "pending" not in kept  # never as .ids.json's own numbers
    later = ids.Issued(staged)  # as lay.restored's and leftout's Journal(staged) read it
    assert later.number("edit", DAY) == 4
    assert later.number("pending", DAY) == 2
    assert later.floor_only("edit", DAY) == [(0, 4)]
    assert later.source("edit", DAY) == staged.index_dir / ids.FLOOR_NAME


def test_a_damaged_floor_number_is_not_carried(tmp_path):
    live, staged = _homes(tmp_path)
    floor = live.index_dir / ids.FLOOR_NAME
    floor.write_text(json.dumps({"edit": {DAY: idform.NUMBER_MOST}}))
    ids.Issued(live).carry_to(ids.Issued(staged))
    kept = json.loads((staged.memory / ".ids.json").read_text())
    assert "floor_only" not in kept and "edit" not in kept
    assert ids.Issued(staged).number("edit", DAY) == 0


def _three_staged_one_left(root) -> Home:
    """p-0001..0003 handed out, then memory/ an older copy: .ids.json and pending.jsonl hold one."""
    md = _start(root, review=True)
    for n in range(3):
        said = md.call({"action": "add", "file": "memory", "text": f"Fact number {n}."})
        assert f"pending as p-{DAY}-{n + 1:04d}" in said
    md.close()
    record = md.home.memory / ".ids.json"
    value = json.loads(record.read_text())
    value["pending"][DAY] = 1
    value.pop("floor_only", None)
    record.write_text(json.dumps(value))
    pending = md.home.memory_file("pending.jsonl")
    pending.write_text(pending.read_text().splitlines(keepends=True)[0])
    return md.home


def test_a_start_with_no_write_keeps_the_floor_s_numbers_past_index_removed(tmp_path):
    root = tmp_path / "home"
    home = _three_staged_one_left(root)
    md = _start(root, review=True)
    md.admin("pending")
    md.close()
    kept = json.loads((home.memory / ".ids.json").read_text())
    assert kept["pending"] == {DAY: 1}  # the floor's numbers are not .ids.json's own
    assert kept["floor_only"] == {"pending": {DAY: [[1, 3]]}}
    (home.index_dir / ids.FLOOR_NAME).unlink()
    md = _start(root, review=True)
    try:
        said = md.call({"action": "add", "file": "memory", "text": "Fact number 4."})
        assert f"pending as p-{DAY}-0004" in said
    finally:
        md.close()


def test_a_damaged_floor_number_read_at_start_is_not_written(tmp_path):
    root = tmp_path / "home"
    md = _start(root)
    md.call({"action": "note", "text": "Zebra notes about kiwis."})
    md.close()
    record = md.home.memory / ".ids.json"
    before = record.read_bytes()
    floor = md.home.index_dir / ids.FLOOR_NAME
    value = json.loads(floor.read_text())
    value["edit"][DAY] = idform.NUMBER_MOST
    floor.write_text(json.dumps(value))
    md = _start(root)
    md.admin("log", {"n": 5})
    md.close()
    assert record.read_bytes() == before


def test_reading_the_floor_where_memory_is_gone_makes_nothing(tmp_path, caplog):
    live, _ = _homes(tmp_path)
    (live.index_dir / ids.FLOOR_NAME).write_text(json.dumps({"edit": {DAY: 4}}))
    with caplog.at_level(logging.WARNING):
        assert ids.Issued(live).last("edit") == f"{DAY}-0004"
    assert not live.memory.exists()
    assert not caplog.records
