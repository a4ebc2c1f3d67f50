"""A restore appends its lines (its forget lines, its own restore line) to the staged journal,
after every id the home handed out. That journal lacks the home's later edits because the restore
replaces them, which its own line says, so no "the journal no longer holds edit ..." warning is
given for it: it named files of the staging folder (index/ids-handed-out.json, which never
exists there, or .ids.json), gone once the restore is laid. The ids stay right, and a journal
that lost lines outside a restore is still warned of."""

import json
import logging
import os
import shutil

from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

DAY = "2026-09-24"
LOST = "no longer holds"


def _edits(md: Memoryd) -> list[tuple[str, str]]:
    edits = json.loads(md.admin("log", {"n": 50, "json": True}))["edits"]
    return [(e["id"], e["action"]) for e in edits]


def _home_with_older_backup(root, clock: Clock) -> str:
    """Edits 0001-0002, a backup, then 0003-0004: the backup's name."""
    md = Memoryd(root, clock=clock)
    try:
        for n in range(2):
            md.call({"action": "add", "file": "user", "text": f"Fact {n} here."})
        made = md.data("backup")["path"]
        for n in range(2, 4):
            md.call({"action": "add", "file": "user", "text": f"Fact {n} here."})
    finally:
        md.close()
    return os.path.basename(made)


def _restore(md: Memoryd, name: str, caplog) -> dict:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        answer = md.data("restore", name=name, replace=True)
    assert not [r.getMessage() for r in caplog.records if LOST in r.getMessage()]
    assert not [r.getMessage() for r in caplog.records if ".restore-" in r.getMessage()]
    return answer


def _write_after(md: Memoryd, caplog) -> None:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        md.call({"action": "add", "file": "user", "text": "After the restore."})
    assert not [r for r in caplog.records if LOST in r.getMessage()]


def test_a_restore_after_memory_removed_whole_warns_of_no_staged_file(tmp_path, caplog):
    root, clock = tmp_path / "home", Clock()
    name = _home_with_older_backup(root, clock)
    shutil.rmtree(root / "memory")
    md = Memoryd(root, clock=clock)
    try:
        answer = _restore(md, name, caplog)
        assert answer["edit"] == f"{DAY}-0005"  # after the ids only the floor still gives
        _write_after(md, caplog)
        assert _edits(md)[-2:] == [(f"{DAY}-0005", "restore"), (f"{DAY}-0006", "add")]
    finally:
        md.close()


def test_a_restore_of_an_older_archive_warns_of_no_staged_file(tmp_path, caplog):
    root, clock = tmp_path / "home", Clock()
    name = _home_with_older_backup(root, clock)
    md = Memoryd(root, clock=clock)
    try:
        answer = _restore(md, name, caplog)
        assert answer["edit"] == f"{DAY}-0005"
        _write_after(md, caplog)
        assert _edits(md)[-2:] == [(f"{DAY}-0005", "restore"), (f"{DAY}-0006", "add")]
    finally:
        md.close()


def test_a_restore_leaving_out_a_text_forgotten_since_warns_of_no_staged_file(tmp_path, caplog):
    root, clock = tmp_path / "home", Clock()
    name = _home_with_older_backup(root, clock)
    md = Memoryd(root, clock=clock)
    try:
        md.data("forget", id="user.md:1")  # Fact 0, edit 0005: the archive holds it
        answer = _restore(md, name, caplog)
        assert _edits(md)[-3:] == [
            (f"{DAY}-0006", "forget"),  # leftout's, the staged journal's first line
            (f"{DAY}-0007", "forget"),  # the home's forget carried over
            (f"{DAY}-0008", "restore"),
        ]
        assert answer["edit"] == f"{DAY}-0008"
        assert "Fact 0 here." not in (root / "memory" / "user.md").read_text()
    finally:
        md.close()


def test_a_restore_carrying_a_forget_over_warns_of_no_staged_file(tmp_path, caplog):
    root, clock = tmp_path / "home", Clock()
    name = _home_with_older_backup(root, clock)
    md = Memoryd(root, clock=clock)
    try:
        md.data("forget", id="user.md:4")  # Fact 3, edit 0005: the archive does not hold it
        answer = _restore(md, name, caplog)
        assert _edits(md)[-2:] == [
            (f"{DAY}-0006", "forget"),  # carried over, the staged journal's first line
            (f"{DAY}-0007", "restore"),
        ]
        assert answer["edit"] == f"{DAY}-0007"
    finally:
        md.close()


def test_a_journal_that_lost_lines_outside_a_restore_is_still_warned_of(tmp_path, caplog):
    root, clock = tmp_path / "home", Clock()
    _home_with_older_backup(root, clock)
    month = root / "memory" / "edits" / "2026-09.jsonl"
    month.write_text("".join(month.read_text().splitlines(keepends=True)[:2]))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        md = Memoryd(root, clock=clock)  # its start journals user.md's entries as a hand edit
    try:
        lost = [r.getMessage() for r in caplog.records if LOST in r.getMessage()]
        assert lost == [
            f"{month}: the journal no longer holds edit {DAY}-0004, the last memoryd handed out "
            f"according to {root / 'memory' / '.ids.json'} (its line was deleted, replaced or "
            "restored from an older copy, or .ids.json is damaged); ids go on after it"
        ]
        assert _edits(md)[-1] == (f"{DAY}-0005", "hand-edit")
    finally:
        md.close()
