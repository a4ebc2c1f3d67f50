"""bxctl memory log when the journal's lines are gone but memory.md and user.md are whole: the
way it gives to the lines must leave the live memory as it is. Followed as written on a real
backup, it prints the archive's journal lines and changes no memory file; a restore is named
only for what it would cost."""

import os
import re
import subprocess

import pytest

from memoryd.data import layout
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_the_way_to_lost_journal_lines_keeps_the_live_memory(md):
    md.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    [first] = [line.split()[0] for line in md.admin("log").splitlines()]
    archive = md.data("backup")["path"]
    md.call({"action": "add", "file": "user", "text": "Prefers tea over coffee."})
    for month in md.store.journal.month_files():
        month.unlink()
    live = {name: path.read_bytes() for name, path in layout.memory_files(md.home)}
    with pytest.raises(AdminRefused) as refused:
        md.admin("log")
    said = str(refused.value)
    assert "to have them again" not in said
    assert "every entry written since leaves them" in said, said
    assert said.endswith("(runbook: journal-lost)"), said
    [command] = re.findall(r"tar -xzOf ARCHIVE [\w/]+", said)
    shown = subprocess.run(
        command.replace("ARCHIVE", archive),
        shell=True,
        capture_output=True,
        text=True,
        cwd=os.fspath(md.home.root),
        timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    assert first in shown.stdout and "Launch is Thursday." in shown.stdout
    assert {name: path.read_bytes() for name, path in layout.memory_files(md.home)} == live
    assert b"Prefers tea over coffee." in live["memory/user.md"]
