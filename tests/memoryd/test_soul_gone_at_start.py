"""soul.md missing at start: in a new home memoryd writes the starter and says "created"; in a home
that already holds memory the owner's soul.md was removed, so the start warns, naming the file and
how to have it back from a backup. Followed as written on a real backup, the owner's soul is back
and nothing else changes."""

import logging
import os
import re
import subprocess

import pytest

from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import SOUL_STARTER

MINE = "You are Ornith, who keeps the owner's racks in order.\n"


def _start(root, caplog) -> list[logging.LogRecord]:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        Memoryd(root).close()
    return [r for r in caplog.records if "soul.md" in r.getMessage()]


def test_a_new_home_gets_the_starter_with_created_only(tmp_path, caplog):
    said = _start(tmp_path / "home", caplog)
    assert [(r.levelno, r.getMessage()) for r in said] == [
        (logging.INFO, f"{tmp_path / 'home/memory/soul.md'}: created")
    ]


def test_a_soul_removed_from_a_home_with_memory_is_warned_of_with_the_way_back(tmp_path, caplog):
    root = tmp_path / "home"
    md = Memoryd(root)
    md.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    soul = md.home.memory_file("soul.md")
    soul.write_text(MINE)
    archive = md.data("backup")["path"]
    md.close()
    soul.unlink()
    [warned] = _start(root, caplog)
    said = warned.getMessage()
    assert warned.levelno == logging.WARNING
    assert said.startswith(f"{soul}: missing in a home that holds memory (1 entry in memory.md")
    assert said.endswith("(runbook: memory-unavailable)")
    assert soul.read_bytes() == SOUL_STARTER.read_bytes()
    memory = md.home.memory_file("memory.md").read_bytes()
    # Pasted as printed, in the folder it names: no shell syntax, so nothing bxctl or a
    # terminal escapes can break it.
    [(command, where)] = re.findall(r"(tar -xzf ARCHIVE memory/soul\.md), run in (\S+) ", said)
    assert where == os.fspath(root)
    subprocess.run(
        command.replace("ARCHIVE", archive),
        shell=True,
        check=True,
        cwd=os.fspath(root),
        timeout=30,
    )
    assert soul.read_text() == MINE
    assert md.home.memory_file("memory.md").read_bytes() == memory
    assert oct(soul.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("held", ["sessions", "ids"])
def test_session_logs_or_ids_handed_out_are_memory_too(tmp_path, caplog, held):
    root = tmp_path / "home"
    md = Memoryd(root)
    if held == "sessions":
        md.say("s-monday", "Where is the staging cluster?", "In rack B7.")
    md.close()
    if held == "ids":  # the journal and the files emptied: only the ids memoryd handed out left
        (md.home.memory / ".ids.json").write_text('{"edit": {"2026-09-24": 3}}')
    md.home.memory_file("soul.md").unlink()
    [warned] = _start(root, caplog)
    assert warned.levelno == logging.WARNING
    shown = "session logs" if held == "sessions" else "edit ids handed out"
    assert "(runbook: memory-unavailable)" in warned.getMessage()
    assert f"holds memory ({shown})" in warned.getMessage()
