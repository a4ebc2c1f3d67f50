"""bxctl against a real memoryd subprocess: log, undo, reindex, review."""

import json
import os
import re

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from proto.client import request
from proto.messages import MemoryBlock, MemoryCall, ToolRequest
from tests.memoryd_process import MemorydProcess

runner = CliRunner()
PENDING = r"p-\d{4}-\d{2}-\d{2}-\d{4}"


def call(memoryd, args, session="s-clean", untrusted=False, call_id="c1"):
    req = ToolRequest(session=session, call_id=call_id, tool="memory", arguments=json.dumps(args))
    return request(
        memoryd.broker_socket, MemoryCall(request=req, taint="private", untrusted=untrusted)
    )


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    yield proc
    proc.stop()


@pytest.fixture
def reviewed(tmp_path):
    proc = MemorydProcess(tmp_path, "[memory]\nreview = true\n").start()
    yield proc
    proc.stop()


def bx(memoryd, *argv):
    return runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})


def test_log_and_undo(memoryd):
    assert call(memoryd, {"action": "add", "file": "memory", "text": "Owner likes tea."}).ok
    assert call(
        memoryd, {"action": "add", "file": "memory", "text": "Owner likes UTC."}, call_id="c2"
    ).ok
    result = bx(memoryd, "memory", "log")
    assert result.exit_code == 0, result.output
    ids = re.findall(r"\d{4}-\d{2}-\d{2}-\d{4}", result.stdout)
    assert len(ids) == 2 and "s-clean" in result.stdout and "add" in result.stdout

    # The older edit is not the latest of memory.md: refused, and nothing changes.
    older, latest = sorted(ids)
    before = (memoryd.home / "memory/memory.md").read_text()
    refused = bx(memoryd, "memory", "undo", older)
    assert refused.exit_code == 1 and refused.stderr.startswith("bxctl: ")
    assert (memoryd.home / "memory/memory.md").read_text() == before

    done = bx(memoryd, "memory", "undo", latest)
    assert done.exit_code == 0, done.output
    block = request(memoryd.loop_socket, MemoryBlock()).text
    assert "Owner likes tea." in block and "Owner likes UTC." not in block
    lines = bx(memoryd, "memory", "log").stdout.splitlines()
    assert len(lines) == 3 and "undo" in lines[-1] and latest in lines[-1]


def test_log_n_limits(memoryd):
    for i in range(4):
        call(memoryd, {"action": "note", "text": f"note {i}"}, call_id=f"c{i}")
    out = bx(memoryd, "memory", "log", "2").stdout
    assert len(re.findall(r"\d{4}-\d{2}-\d{2}-\d{4}", out)) == 2


def test_reindex(memoryd):
    call(memoryd, {"action": "note", "text": "one"})
    result = bx(memoryd, "reindex")
    assert result.exit_code == 0
    assert result.stdout == "reindexed: 0 logs, 0 records, 1 note\n"
    call(memoryd, {"action": "note", "text": "two"})
    assert bx(memoryd, "reindex").stdout == "reindexed: 0 logs, 0 records, 2 notes\n"


def test_reindex_says_the_logs_it_left_aside(memoryd):
    """A FIFO and a log damaged at its first record: neither counted among the logs reindexed,
    both said after the counts (text and --json)."""
    sessions = memoryd.home / "sessions"
    for name in ("alpha", "gamma", "delta"):
        (sessions / name).mkdir(parents=True, mode=0o700)
    record = '{"type":"user","time":"2026-12-01T10:00:00Z","content":"alpha says hi"}\n'
    (sessions / "alpha" / "0.jsonl").write_text(record)
    os.mkfifo(sessions / "gamma" / "0.jsonl", 0o600)
    (sessions / "delta" / "0.jsonl").write_text("garbage\n" + record)
    result = bx(memoryd, "reindex")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "reindexed: 1 log, 1 record, 0 notes; 2 session logs left aside, wholly or from a "
        "damaged record (bxctl memory stats names them and why)\n"
    )
    said = json.loads(bx(memoryd, "reindex", "--json").stdout)
    assert said == {"logs": 1, "records": 1, "notes": 0, "left_aside": 2, "not_indexed": 0}


def test_review_pending_accept_reject(reviewed):
    reply = call(reviewed, {"action": "add", "file": "user", "text": "Owner is Ada."})
    assert reply.ok
    assert (reviewed.home / "memory/user.md").read_text().strip() == ""
    listing = bx(reviewed, "memory", "pending")
    assert listing.exit_code == 0 and "Owner is Ada." in listing.stdout
    pid = re.search(PENDING, reply.output + listing.stdout).group(0)
    accepted = bx(reviewed, "memory", "accept", pid)
    assert accepted.exit_code == 0, accepted.output
    assert "Owner is Ada." in request(reviewed.loop_socket, MemoryBlock()).text

    reply = call(reviewed, {"action": "add", "file": "user", "text": "Owner is Bob."}, call_id="c9")
    pid = re.search(PENDING, bx(reviewed, "memory", "pending").stdout)
    rejected = bx(reviewed, "memory", "reject", pid.group(0))
    assert rejected.exit_code == 0, rejected.output
    assert "Owner is Bob." not in (reviewed.home / "memory/user.md").read_text()
    again = bx(reviewed, "memory", "accept", pid.group(0))
    assert again.exit_code == 1


def test_ids_print_as_they_are_and_entries_stay_escaped(reviewed):
    args = {"action": "add", "file": "user", "text": "Owner writes *bold* as @ada."}
    assert call(reviewed, args, session="my_sess_1").ok
    listing = bx(reviewed, "memory", "pending")
    assert listing.exit_code == 0, listing.output
    head, *entry_lines = listing.stdout.splitlines()
    assert " my_sess_1 " in f" {head} " and "\\_" not in head
    assert any("\\*bold\\* as \\@ada" in line for line in entry_lines)


def test_the_wrong_socket_points_at_the_runbook_without_a_backslash(memoryd):
    result = runner.invoke(
        app, ["memory", "log", "--memory-socket", str(memoryd.loop_socket)], env={}
    )
    assert result.exit_code == 1
    assert "'memory_admin' is not served on this socket" in result.stderr
    assert "\\" not in result.stderr and "(runbook: wrong-socket)" in result.stderr
