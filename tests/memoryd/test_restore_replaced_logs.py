"""restore --replace of an archive whose copy of a session log differs from the one the index
read, the home's log removed before: recall answers what the restored home holds at once, never
the rows of the log replaced, whether or not memoryd hears bxctl's session_updated for the copy
laid (replacedlogs.py). A log the home has is bxctl's to keep, and so are its rows."""

import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from memoryd.data.replacedlogs import archived
from proto.client import request
from proto.messages import MemoryAdmin, SessionUpdated
from proto.records import AssistantRecord, UserRecord, append_session_record
from tests.memoryd_process import MemorydProcess

runner = CliRunner()
T = "2026-12-01T15:33:35Z"
KEPT = "The zebra crossing on Elm Street is closed until March."
DROPPED = "The owner's sister is called Ines."
STAYS = "The heron nests by the old mill pond."


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path)
    proc.start()
    yield proc
    proc.stop()


def bx(memoryd, *argv) -> str:
    result = runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def say(memoryd, session: str, text: str) -> None:
    """A turn appended to a session's log, as loopd writes it, and memoryd told of it."""
    folder = memoryd.home / "sessions" / session
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    append_session_record(folder / "0.jsonl", UserRecord(time=T, content=text))
    append_session_record(folder / "0.jsonl", AssistantRecord(time=T, content="Noted."))
    request(memoryd.loop_socket, SessionUpdated(session=session))


def search(memoryd, words: str) -> str:
    return bx(memoryd, "memory", "search", words)


def backed_up_then_said(memoryd, tmp_path):
    """s-monday's log archived holding KEPT, then DROPPED said and indexed after the backup;
    s-tuesday's log archived and kept as it is. The path of the archive."""
    say(memoryd, "s-monday", KEPT)
    say(memoryd, "s-tuesday", STAYS)
    copy = tmp_path / "saved.tar.gz"
    bx(memoryd, "memory", "backup", "--with-sessions", str(copy))
    say(memoryd, "s-monday", DROPPED)
    assert "Ines" in search(memoryd, "sister Ines")
    return copy


@pytest.mark.parametrize("removed", ["folder", "log"])
def test_a_shorter_copy_laid_in_place_of_a_removed_log_is_what_recall_finds(
    memoryd, tmp_path, removed
):
    copy = backed_up_then_said(memoryd, tmp_path)
    log = memoryd.home / "sessions/s-monday/0.jsonl"
    shutil.rmtree(log.parent) if removed == "folder" else log.unlink()
    out = bx(memoryd, "memory", "restore", "--replace", str(copy))
    assert "bxctl laid 1 session log into sessions/ (memoryd indexed it)" in out
    assert DROPPED.encode() not in log.read_bytes()
    assert "no matches" in search(memoryd, "sister Ines")
    assert KEPT in search(memoryd, "zebra crossing")
    assert STAYS in search(memoryd, "heron nests")


def test_the_rows_of_a_replaced_log_are_gone_when_memoryd_does_not_hear_of_the_copy(
    memoryd, tmp_path
):
    copy = backed_up_then_said(memoryd, tmp_path)
    shutil.rmtree(memoryd.home / "sessions/s-monday")
    aside = memoryd.loop_socket.with_name("aside.sock")
    os.rename(memoryd.loop_socket, aside)  # bxctl's session_updated reaches no one
    try:
        out = bx(memoryd, "memory", "restore", "--replace", str(copy))
    finally:
        os.rename(aside, memoryd.loop_socket)
    assert "memoryd indexes it at its next start (its loopd socket does not answer)" in out
    assert "no matches" in search(memoryd, "sister Ines")  # not the replaced log's rows
    assert STAYS in search(memoryd, "heron nests")  # a log the home has keeps its rows
    memoryd.stop()
    memoryd.start()
    assert "no matches" in search(memoryd, "sister Ines")
    assert KEPT in search(memoryd, "zebra crossing")


def test_memoryds_restore_alone_drops_what_it_read_of_a_log_the_home_lacks(memoryd, tmp_path):
    copy = backed_up_then_said(memoryd, tmp_path)
    shutil.rmtree(memoryd.home / "sessions/s-monday")
    os.link(copy, memoryd.home / "backups" / "saved.tar.gz")
    arg = json.dumps({"name": "saved.tar.gz", "replace": True})
    request(memoryd.admin_socket, MemoryAdmin(command="restore", arg=arg))
    assert "no matches" in search(memoryd, "sister Ines")
    assert "no matches" in search(memoryd, "zebra crossing")  # no log holds it until bxctl lays
    assert STAYS in search(memoryd, "heron nests")
    logged = memoryd.log.read_text()
    assert "holds 1 session log the home lacks; the index dropped what it held of them" in logged


def test_the_sessions_an_archive_holds_are_its_logs_alone():
    files = [
        {"path": "sessions/s-a/0.jsonl"},
        {"path": "sessions/s-b/1.jsonl"},
        {"path": "sessions/../0.jsonl"},
        {"path": "memory/notes.md"},
        {"path": "sessions/s-c/0.jsonl/x"},
        {"path": 7},
        "sessions/s-d/0.jsonl",
    ]
    assert archived({"files": files}) == ["s-a"]
