"""Files that are not what they claim: memoryd neither reads, writes nor chmods
through a symbolic link in its home, never waits on a FIFO, and says which path is wrong."""

import json
import logging
import os
import stat
import subprocess
import sys
import time

import pytest

from memoryd.errors import FileInvalid, WriteFailed
from memoryd.home import Home
from memoryd.index.index import Index
from proto.client import request
from proto.files import NotRegular
from proto.messages import MemoryCall, ToolRequest
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, args, new_store
from tests.memoryd.test_index import write_log
from tests.memoryd_process import MemorydProcess
from tests.recalling import recall_on


def start_fails(tmp_path) -> str:
    """Run memoryd on tmp_path's home, expecting it to refuse to start: its one error line."""
    memoryd = MemorydProcess(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(memoryd.config)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("memoryd: cannot start")]
    assert len(lines) == 1, result.stderr
    assert "(runbook: memoryd-start-failed)" in lines[0]
    assert not (memoryd.home / "run" / "owner-memory" / "admin.sock").exists()
    return lines[0]


@pytest.fixture
def outside(tmp_path):
    """A folder outside the home, 0755, holding a file memoryd must never touch."""
    folder = tmp_path / "outside"
    folder.mkdir()
    os.chmod(folder, 0o755)
    (folder / "target.md").write_text("outside\n")
    return folder


def untouched(outside) -> bool:
    return (
        stat.S_IMODE(os.stat(outside).st_mode) == 0o755
        and (outside / "target.md").read_text() == "outside\n"
        and sorted(os.listdir(outside)) == ["target.md"]
    )


def home_with_memory(tmp_path) -> Home:
    store = new_store(tmp_path)
    return store.home


@pytest.mark.parametrize("name", ["notes.md", "memory.md", "user.md", "soul.md", "pending.jsonl"])
def test_a_symlinked_memory_file_refuses_the_start(tmp_path, outside, name):
    home = home_with_memory(tmp_path)
    path = home.memory_file(name)
    path.unlink(missing_ok=True)
    path.symlink_to(outside / "target.md")
    line = start_fails(tmp_path)
    assert f"memory/{name} is a symbolic link" in line
    assert untouched(outside)


@pytest.mark.parametrize("name", ["edits", "recalls"])
def test_a_symlinked_memory_folder_refuses_the_start_and_is_not_chmodded(tmp_path, outside, name):
    home = home_with_memory(tmp_path)
    folder = home.memory / name
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.symlink_to(outside)
    line = start_fails(tmp_path)
    assert f"memory/{name} is a symbolic link" in line
    assert untouched(outside)


def test_a_fifo_at_notes_md_refuses_the_start_without_hanging(tmp_path):
    home = home_with_memory(tmp_path)
    path = home.memory_file("notes.md")
    path.unlink()
    os.mkfifo(path)
    began = time.monotonic()
    line = start_fails(tmp_path)
    assert time.monotonic() - began < 20
    assert "memory/notes.md is a FIFO" in line


def test_a_symlinked_index_refuses_the_start(tmp_path, outside):
    home = home_with_memory(tmp_path)
    os.makedirs(home.index_dir)
    (home.index_dir / "memory.sqlite3").symlink_to(outside / "target.md")
    assert "memory.sqlite3 is a symbolic link" in start_fails(tmp_path)
    assert untouched(outside)


# --- while memoryd runs: the owner swaps a file or folder for a link ------------------------


def swap_for_link(path, target) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    else:
        path.unlink()
    path.symlink_to(target)


def test_an_edit_refuses_a_memory_md_swapped_for_a_link(tmp_path, outside):
    store = new_store(tmp_path)
    swap_for_link(store.home.memory_file("memory.md"), outside / "target.md")
    with pytest.raises(FileInvalid, match="memory.md is a symbolic link"):
        store.call(*loose_call(args(action="add", file="memory", text="a fact"), **CLEAN))
    assert untouched(outside)


def test_a_note_refuses_a_notes_md_swapped_for_a_link(tmp_path, outside):
    store = new_store(tmp_path)
    swap_for_link(store.home.memory_file("notes.md"), outside / "target.md")
    with pytest.raises(WriteFailed, match=r"^not applied: .*notes.md is a symbolic link"):
        store.call(*loose_call(args(action="note", text="a note"), **CLEAN))
    assert untouched(outside)


def test_the_journal_refuses_an_edits_folder_swapped_for_a_link(tmp_path, outside):
    store = new_store(tmp_path)
    swap_for_link(store.home.edits, outside)
    with pytest.raises(WriteFailed, match=r"^not applied: .*edits is a symbolic link"):
        store.call(*loose_call(args(action="note", text="a note"), **CLEAN))
    assert untouched(outside)


def test_the_recall_log_refuses_a_recalls_folder_swapped_for_a_link(tmp_path, outside):
    store = new_store(tmp_path)
    index = Index(store.home)
    index.open()
    swap_for_link(store.home.recalls, outside)
    try:
        with pytest.raises(NotRegular):
            recall_on(index, "anything", 5, session="mm-1")
    finally:
        index.close()
    assert untouched(outside)


def test_a_write_refused_for_a_link_is_answered_over_the_socket(tmp_path, outside):
    memoryd = MemorydProcess(tmp_path).start()
    try:
        swap_for_link(memoryd.home / "memory" / "notes.md", outside / "target.md")
        req = ToolRequest(
            session="mm-1", call_id="c1", tool="memory", arguments=args(action="note", text="n")
        )
        reply = request(
            memoryd.broker_socket, MemoryCall(request=req, taint="private", untrusted=False)
        )
        assert reply.ok is False
        assert reply.output.startswith("not applied: ")
        assert "notes.md is a symbolic link" in reply.output
        assert "Traceback" not in memoryd.log.read_text()
    finally:
        memoryd.stop()
    assert untouched(outside)


# --- session logs ---------------------------------------------------------------------------


def test_symlinked_session_logs_are_skipped_with_a_log_line(tmp_path, outside, caplog):
    home = Home(tmp_path / "home")
    write_log(home, "mm-real", ["the launch window moved"])
    elsewhere = tmp_path / "elsewhere"
    write_log(Home(elsewhere), "mm-linked", ["a secret from outside the home"])
    (home.sessions / "mm-linked").symlink_to(elsewhere / "sessions" / "mm-linked")
    os.makedirs(home.sessions / "mm-filelink")
    (home.sessions / "mm-filelink" / "0.jsonl").symlink_to(
        elsewhere / "sessions" / "mm-linked" / "0.jsonl"
    )
    index = Index(home)
    index.open()
    try:
        with caplog.at_level(logging.WARNING):
            added = index.catch_up_all()
        assert added == 1
        assert "from outside" not in recall_on(index, "secret outside", 5, session="mm-real").text
        skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
        assert any("mm-linked" in m and "symbolic link" in m for m in skipped)
        assert any("mm-filelink" in m and "symbolic link" in m for m in skipped)
    finally:
        index.close()


def test_session_updated_for_a_symlinked_log_is_refused(tmp_path):
    home = Home(tmp_path / "home")
    elsewhere = tmp_path / "elsewhere"
    write_log(Home(elsewhere), "mm-linked", ["a secret from outside the home"])
    os.makedirs(home.sessions)
    (home.sessions / "mm-linked").symlink_to(elsewhere / "sessions" / "mm-linked")
    index = Index(home)
    index.open()
    try:
        from memoryd.errors import SessionUnknown

        with pytest.raises(SessionUnknown, match="symbolic link"):
            index.catch_up_session("mm-linked")
    finally:
        index.close()
    assert json.loads((elsewhere / "sessions/mm-linked/0.jsonl").read_text().splitlines()[0])
