"""A damaged journal line and an id held on two lines: what memoryd's log and show's refusal say
to do must mend the journal and leave the live memory as it is. A restore would mend it only by
taking memory.md, user.md, notes.md and soul.md back to the archive's time, so none of them sends
the owner there; each names the runbook entry that covers it. Followed as written on a real
backup, the line comes back whole and no memory file changes."""

import json
import logging
import os
import re
import subprocess
from pathlib import Path

import pytest

from memoryd.data import layout
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

DAY = "2026-09-24"
RUNBOOK = Path(__file__).resolve().parents[2] / "runbook"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    for text in ("Mem one.", "Mem two."):
        m.call({"action": "add", "file": "memory", "text": text})
    yield m
    m.close()


def _live(md: Memoryd) -> dict[str, bytes]:
    return {
        name: path.read_bytes()
        for name, path in layout.memory_files(md.home)
        if not name.startswith("memory/edits/")
    }


def _entry_named(said: str) -> None:
    assert "restore a backup" not in said, said
    [entry] = re.findall(r"\(runbook: ([a-z-]+)\)", said)
    assert entry == "journal-damaged"
    assert (RUNBOOK / f"{entry}.md").exists()


def _run(command: str, archive: str, md: Memoryd) -> str:
    shown = subprocess.run(
        command.replace("ARCHIVE", archive),
        shell=True,
        capture_output=True,
        text=True,
        cwd=os.fspath(md.home.root),
        timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_line_damaged_in_its_middle_is_mended_from_a_backup_without_a_restore(md, caplog):
    archive = md.data("backup")["path"]
    md.call({"action": "add", "file": "user", "text": "Prefers tea over coffee."})
    (month,) = md.home.edits.glob("*.jsonl")
    lines = month.read_bytes().split(b"\n")
    whole = lines[1]
    lines[1] = whole.replace(b'"time": "', b'"time": ', 1)
    month.write_bytes(b"\n".join(lines))
    live = _live(md)
    with caplog.at_level(logging.WARNING):
        md.admin("log")
    [logged] = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    with pytest.raises(AdminRefused) as refused:
        md.admin("show", {"id": f"{DAY}-0002"})
    for said in (logged, str(refused.value)):
        _entry_named(said)
        [command] = re.findall(r"tar -xzOf ARCHIVE [\w/.-]+", said)
        shown = _run(command, archive, md)
        [copy] = [line for line in shown.splitlines() if line.startswith(f'{{"id": "{DAY}-0002"')]
        assert copy.encode() == whole
    lines[1] = copy.encode()
    month.write_bytes(b"\n".join(lines))
    assert "Mem two." in md.admin("show", {"id": f"{DAY}-0002"})
    assert _live(md) == live
    assert b"Prefers tea over coffee." in live["memory/user.md"]


def test_a_torn_line_and_an_id_held_twice_send_nowhere_near_a_restore(md, caplog):
    archive = md.data("backup")["path"]
    (month,) = md.home.edits.glob("*.jsonl")
    first = month.read_bytes().split(b"\n")[0]
    month.write_bytes(month.read_bytes() + first + b"\n")  # the first line copied by hand
    md.call({"action": "add", "file": "user", "text": "Prefers tea over coffee."})
    with pytest.raises(AdminRefused) as twice:
        md.admin("show", {"id": f"{DAY}-0001"})
    _entry_named(str(twice.value))
    [command] = re.findall(r"tar -xzOf ARCHIVE [\w/.-]+", str(twice.value))
    held = [line for line in _run(command, archive, md).splitlines() if f"{DAY}-0001" in line]
    assert len(held) == 1  # the backup made before the copy tells them apart

    last = json.loads(month.read_bytes().split(b"\n")[-2])["id"]
    month.write_bytes(month.read_bytes()[:-20])  # a power cut tears the last append
    with caplog.at_level(logging.WARNING):
        md.admin("log")
        with pytest.raises(AdminRefused) as torn:
            md.admin("undo", last)
    logged = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    for said in [*logged, str(torn.value)]:
        _entry_named(said)
        assert "delete that line" in said
    assert logged
