"""What only index/ids-handed-out.json (the floor, the spare copy of the ids handed out) gives is
never said as fact about lost lines: a pending number or a first edit id the floor alone holds,
damaged or not, is named as the floor's wherever pending, accept, reject, log, show and undo call
writes or lines lost, and it is never written into memory/.ids.json. The floor still counts for
the next ids, so none is handed out twice after memory/ is replaced by an older copy."""

import json
import logging

import pytest

from memoryd.errors import AdminRefused
from memoryd.home import Home
from memoryd.journal import ids
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

DAY = "2026-09-24"


def _start(root, caplog=None, review: bool = False) -> tuple[Memoryd, list[str]]:
    if caplog is None:
        md = Memoryd(root, clock=Clock())
        md.store.review_on = review
        return md, []
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        md = Memoryd(root, clock=Clock())
    md.store.review_on = review
    return md, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _stage(md: Memoryd, text: str) -> str:
    return md.call({"action": "add", "file": "memory", "text": text})


def _edit(path, change) -> None:
    value = json.loads(path.read_text())
    change(value)
    path.write_text(json.dumps(value))


def _three_staged(tmp_path):
    root = tmp_path / "home"
    md, _ = _start(root, review=True)
    for n in range(3):
        assert f"pending as p-{DAY}-{n + 1:04d}" in _stage(md, f"Fact number {n}.")
    md.close()
    return root, md.home


def _gone_lines(md: Memoryd) -> list[str]:
    return [line for line in md.admin("pending").splitlines() if " gone" in line]


def test_a_damaged_pending_number_of_the_floor_is_named_as_the_floor_s(tmp_path, caplog):
    root, home = _three_staged(tmp_path)
    floor = home.index_dir / ids.FLOOR_NAME
    record = home.memory / ".ids.json"
    pending = home.memory_file("pending.jsonl")
    _edit(floor, lambda v: v["pending"].update({DAY: 9}))  # one digit damaged: 3 -> 9
    md, warned = _start(root, caplog, review=True)
    try:
        said = (
            f"(6 staged writes (p-{DAY}-0004 to p-{DAY}-0009) memoryd answered as pending "
            f"according to {floor} are gone, or {ids.FLOOR_NAME} is damaged: neither {pending} "
            "holds them nor the journal an accept or reject: their lines left the file (deleted, "
            "replaced by an older copy, or removed by hand). A backup made while they waited "
            "holds their lines: tar -xzOf ARCHIVE memory/pending.jsonl prints the lines and "
            "changes nothing (runbook: journal-lost))"
        )
        assert _gone_lines(md) == [said]
        assert [w for w in warned if " gone" in w] == [f"{pending}: {said.strip('()')}"]
        for command in ("accept", "reject"):
            with pytest.raises(AdminRefused) as refused:
                md.admin(command, f"p-{DAY}-0005")
            assert str(refused.value).startswith(
                f"refused: according to {floor}, p-{DAY}-0005 was staged (or "
                f"{ids.FLOOR_NAME} is damaged), but its line has left {pending} since"
            )
        # .ids.json does not take the floor's number; the floor still counts for the next id
        md.call({"action": "note", "text": "An edit rewrites both copies."})
        assert json.loads(record.read_text())["pending"] == {DAY: 3}
        assert json.loads(floor.read_text())["pending"] == {DAY: 9}
        assert f"pending as p-{DAY}-0010" in _stage(md, "After the floor's number.")
        assert json.loads(record.read_text())["floor_only"] == {"pending": {DAY: [[3, 9]]}}
    finally:
        md.close()
    # across a restart, after a write of that day: still the floor's, never a fact
    md, _ = _start(root, review=True)
    try:
        assert _gone_lines(md) == [said]
    finally:
        md.close()


def test_staged_writes_lost_before_and_beyond_the_floor_are_said_apart(tmp_path):
    root, home = _three_staged(tmp_path)
    floor = home.index_dir / ids.FLOOR_NAME
    pending = home.memory_file("pending.jsonl")
    _edit(floor, lambda v: v["pending"].update({DAY: 5}))
    lines = pending.read_bytes().splitlines(keepends=True)
    pending.write_bytes(lines[0] + lines[2])  # p-...-0002 left the file: a fact of .ids.json
    md, _ = _start(root, review=True)
    try:
        gone = _gone_lines(md)
        assert len(gone) == 2
        assert gone[0].startswith(
            f"(1 staged write (p-{DAY}-0002) memoryd answered as pending is gone: neither"
        )
        assert gone[1].startswith(
            f"(2 staged writes (p-{DAY}-0004 to p-{DAY}-0005) memoryd answered as pending "
            f"according to {floor} are gone, or {ids.FLOOR_NAME} is damaged"
        )
        with pytest.raises(AdminRefused) as refused:
            md.admin("accept", f"p-{DAY}-0002")
        assert str(refused.value).startswith(f"refused: p-{DAY}-0002 was staged, but its line")
    finally:
        md.close()


def test_a_floor_number_a_held_line_vouches_for_is_a_fact(tmp_path):
    root, home = _three_staged(tmp_path)
    record = home.memory / ".ids.json"
    pending = home.memory_file("pending.jsonl")
    _edit(record, lambda v: v["pending"].update({DAY: 1}))  # .ids.json older than the floor
    lines = pending.read_bytes().splitlines(keepends=True)
    pending.write_bytes(lines[0] + lines[2])  # p-...-0003 held: 0002 was handed out before it
    md, _ = _start(root, review=True)
    try:
        gone = _gone_lines(md)
        assert len(gone) == 1 and gone[0].startswith(
            f"(1 staged write (p-{DAY}-0002) memoryd answered as pending is gone: neither"
        )
    finally:
        md.close()


def test_a_damaged_first_of_the_floor_is_named_and_not_copied(tmp_path, caplog):
    root = tmp_path / "home"
    md, _ = _start(root)
    md.call({"action": "add", "file": "memory", "text": "Owner prefers UTC."})
    md.close()
    floor = md.home.index_dir / ids.FLOOR_NAME
    record = md.home.memory / ".ids.json"
    _edit(floor, lambda v: v["first"].update({"edit": f"2016{DAY[4:]}-0001"}))
    md, _ = _start(root)
    try:
        last = md.admin("log", {"n": 20}).splitlines()[-1]
        assert last.startswith(
            f"(edits memoryd journalled before {DAY}-0001 (from 2016{DAY[4:]}-0001 on, according "
            f"to {floor}, or {ids.FLOOR_NAME} is damaged) are no longer in the journal"
        )
        with pytest.raises(AdminRefused) as refused:
            md.admin("show", {"id": f"2020{DAY[4:]}-0001"})
        assert f"according to {floor}, or {ids.FLOOR_NAME} is damaged" in str(refused.value)
        md.call({"action": "note", "text": "A write rewrites both copies."})
        assert json.loads(record.read_text())["first"] == {"edit": f"{DAY}-0001"}
    finally:
        md.close()
    floor.unlink()  # removing the damaged spare cures it
    md, _ = _start(root)
    try:
        assert "no longer" not in md.admin("log", {"n": 20})
    finally:
        md.close()


def test_memory_removed_whole_still_says_the_lost_edits_naming_the_floor(tmp_path):
    root = tmp_path / "home"
    md, _ = _start(root)
    md.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    md.call({"action": "add", "file": "memory", "text": "Rack B7."})
    md.close()
    floor = md.home.index_dir / ids.FLOOR_NAME
    for month in md.home.edits.glob("*.jsonl"):
        month.unlink()
    (md.home.memory / ".ids.json").unlink()
    md, _ = _start(root)
    try:
        md.call({"action": "add", "file": "user", "text": "Prefers tea over coffee."})
        [listed] = [line for line in md.admin("log").splitlines() if "no longer" in line]
        assert listed.startswith(
            f"(edits memoryd journalled before {DAY}-0003 (from {DAY}-0001 on, according to "
            f"{floor}, or {ids.FLOOR_NAME} is damaged) are no longer in the journal"
        )
    finally:
        md.close()


def test_a_restore_carries_the_floor_s_numbers_for_the_next_ids_not_into_ids_json(tmp_path):
    live, staged = Home(tmp_path / "live"), Home(tmp_path / "staged")
    for folder in (live.memory, live.index_dir, staged.memory):
        folder.mkdir(parents=True)
    (live.memory / ".ids.json").write_text(json.dumps({"pending": {DAY: 3}}))
    (live.index_dir / ids.FLOOR_NAME).write_text(json.dumps({"pending": {DAY: 9}}))
    there = ids.Issued(staged)
    ids.Issued(live).carry_to(there)
    assert there.number("pending", DAY) == 9  # no id handed out twice
    assert there.floor_only("pending", DAY) == [(3, 9)]
    kept = json.loads((staged.memory / ".ids.json").read_text())
    assert kept["pending"] == {DAY: 3}
    assert kept["floor_only"] == {"pending": {DAY: [[3, 9]]}}


def test_numbers_only_the_floor_gave_are_never_handed_out_again_once_it_is_gone(tmp_path):
    """memory/ replaced by an older copy, a write of another kind, then index/ removed (it is
    rebuildable): the staged writes' numbers the floor alone gave still count for the next."""
    root, home = _three_staged(tmp_path)
    record = home.memory / ".ids.json"
    _edit(record, lambda v: v["pending"].update({DAY: 1}))  # an older copy: one staged
    pending = home.memory_file("pending.jsonl")
    pending.write_text(pending.read_text().splitlines(keepends=True)[0])
    md, _ = _start(root)
    md.store.review_on = False
    assert "updated" in md.call({"action": "add", "file": "user", "text": "An edit."})
    md.close()
    (home.index_dir / ids.FLOOR_NAME).unlink()
    md, _ = _start(root, review=True)
    assert f"pending as p-{DAY}-0004" in _stage(md, "Fact number 4.")
    md.close()
