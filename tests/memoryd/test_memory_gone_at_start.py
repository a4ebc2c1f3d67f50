"""Memory memoryd held, found gone: notes.md removed between runs or while memoryd runs, memory/
removed whole between runs. The start makes what is missing anew (so sessions start) but says in
one warning what was lost and the way back, a note never makes a new notes.md that hides the old
one's loss, and edit ids are never handed out twice though memory/.ids.json went with memory/."""

import json
import logging
import os
import shutil
import subprocess

import pytest

from memoryd.errors import FileInvalid
from memoryd.journal.ids import FLOOR_NAME
from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd


def _start(root, caplog) -> tuple[Memoryd, list[logging.LogRecord]]:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        md = Memoryd(root)
    return md, list(caplog.records)


def _warned(records: list[logging.LogRecord]) -> list[str]:
    return [
        r.getMessage()
        for r in records
        if r.levelno >= logging.WARNING and "changed outside memoryd" not in r.getMessage()
    ]


def _texts(path) -> list[str]:
    return [n.text for n in notes.parse(path.read_bytes())]


def test_notes_md_removed_between_runs_is_said_with_the_way_back(tmp_path, caplog):
    root = tmp_path / "home"
    md = Memoryd(root)
    md.call({"action": "note", "text": "Zebra notes about kiwis."})
    md.call({"action": "note", "text": "The boiler service code is 7781."})
    archive = md.data("backup")["path"]
    md.call({"action": "note", "text": "Written after the backup."})
    md.close()
    path = md.home.memory_file("notes.md")
    path.unlink()
    again, records = _start(root, caplog)
    [said] = _warned(records)
    assert said.startswith(f"{md.home.memory}: missing in a home that holds memory (")
    assert "notes.md (made anew, empty: the journal holds 3 notes it held" in said
    assert f"tar -xzOf {root / 'backups' / os.path.basename(archive)} memory/notes.md" in said
    assert "notes journalled after it: bxctl memory log lists them" in said
    assert said.endswith("(runbook: memory-unavailable)")
    assert f"{path}: created" not in [r.getMessage() for r in records]
    # Notes go on after the start; the archive's are put back in front of them, as said.
    again.call({"action": "note", "text": "Written after the start."})
    again.close()
    old = subprocess.run(
        [
            "tar",
            "-xzOf",
            os.path.join(root, "backups", os.path.basename(archive)),
            "memory/notes.md",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    ).stdout
    path.write_bytes(old + path.read_bytes())
    assert _texts(path) == [
        "Zebra notes about kiwis.",
        "The boiler service code is 7781.",
        "Written after the start.",
    ]


def test_a_new_home_says_created_and_warns_of_nothing(tmp_path, caplog):
    _, records = _start(tmp_path / "home", caplog)
    assert _warned(records) == []
    assert f"{tmp_path / 'home/memory/notes.md'}: created" in [r.getMessage() for r in records]


def test_a_note_to_a_notes_md_removed_while_running_is_refused_not_made_anew(tmp_path, caplog):
    md = Memoryd(tmp_path / "home")
    md.call({"action": "note", "text": "Zebra notes about kiwis."})
    md.call({"action": "add", "file": "memory", "text": "Alpha entry."})
    path = md.home.memory_file("notes.md")
    path.unlink()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        with pytest.raises(FileInvalid, match="refused: notes.md is missing"):
            md.call({"action": "note", "text": "Written after the rm."})
        # An untrusted add is a note, and a remove moves its entry to notes.md: refused alike.
        with pytest.raises(FileInvalid, match="refused: notes.md is missing"):
            md.call({"action": "add", "file": "memory", "text": "Planted."}, tainted=True)
        with pytest.raises(FileInvalid, match="refused: notes.md is missing"):
            md.call({"action": "remove", "file": "memory", "old": "Alpha entry."})
    assert not os.path.lexists(path)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 3
    assert errors[0].getMessage().startswith(f"{path}: missing (deleted or moved since memoryd")
    assert f"tar -xzf ARCHIVE memory/notes.md, run in {md.home.root}," in errors[0].getMessage()
    assert md.home.memory_file("memory.md").read_text().strip() == "Alpha entry."
    # Put back (here: made empty by the owner), notes go on.
    path.write_bytes(b"")
    assert md.call({"action": "note", "text": "After the owner's word."}) == "noted"
    md.close()


def test_memory_folder_removed_between_runs_is_said_and_ids_are_not_given_again(tmp_path, caplog):
    root = tmp_path / "home"
    md = Memoryd(root)
    md.call({"action": "add", "file": "memory", "text": "Alpha entry."})
    md.call({"action": "add", "file": "user", "text": "User is Kim."})
    md.call({"action": "note", "text": "Zebra note about kiwis."})
    md.data("backup")
    newest = md.data("backup")["path"]
    old_lines = md.store.journal.records()
    given = [r.id for r in old_lines]
    md.close()
    shutil.rmtree(md.home.memory)
    again, records = _start(root, caplog)
    [said] = _warned(records)
    assert said.startswith(
        f"{md.home.memory}: memory/ missing (memory.md, user.md, notes.md, soul.md and the edit "
        "journal) in a home that holds memory (edit ids handed out, archives in "
    )
    named = root / "backups" / os.path.basename(newest)
    assert f"bxctl memory restore --replace {named} puts it back whole" in said
    assert said.endswith("(runbook: restore-from-a-backup)")
    again.call({"action": "add", "file": "memory", "text": "Fresh entry."})
    [fresh] = [r.id for r in again.store.journal.records()]
    assert fresh not in given and fresh > max(given)
    # The way back as said: the newest archive restored, every id meaning its edit again.
    again.data("restore", name=os.path.basename(newest), replace=True)
    assert again.store.journal.records()[: len(given)] == old_lines
    assert "Alpha entry." in again.store.block() and "User is Kim." in again.store.block()
    assert again.recall("kiwis").startswith("[1] ")
    again.close()


def test_the_id_floor_outside_memory_is_kept_with_each_id(tmp_path):
    md = Memoryd(tmp_path / "home")
    md.call({"action": "add", "file": "memory", "text": "Alpha entry."})
    md.close()
    kept = json.loads((md.home.memory / ".ids.json").read_text())
    assert json.loads((md.home.index_dir / FLOOR_NAME).read_text()) == kept
    assert oct((md.home.index_dir / FLOOR_NAME).stat().st_mode & 0o777) == "0o600"


def test_files_removed_together_are_named_in_one_warning_each_with_its_way_back(tmp_path, caplog):
    root = tmp_path / "home"
    md = Memoryd(root)
    md.call({"action": "add", "file": "memory", "text": "Alpha entry."})
    md.call({"action": "note", "text": "Zebra note about kiwis."})
    md.close()
    md.home.memory_file("memory.md").unlink()
    md.home.memory_file("notes.md").unlink()
    again, records = _start(root, caplog)
    [said] = _warned(records)
    assert "memory.md (made anew, empty; any entries it held are journalled as a hand edit" in said
    assert "; notes.md (made anew, empty: the journal holds 1 note it held" in said
    assert "(none is in " in said and "the journal's note lines: bxctl memory log" in said
    # memory.md's way back as said: the hand edit journalled, undone.
    [lost] = [r for r in again.store.journal.records() if r.action == "hand-edit"]
    assert lost.before == ["Alpha entry."] and lost.after == []
    again.store.undo(lost.id)
    assert "Alpha entry." in again.store.block()
    again.close()
