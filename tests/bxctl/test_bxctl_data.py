"""bxctl memory backup, restore, export, import, forget against a real memoryd subprocess."""

import json
import os
import shutil
import stat

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from proto.client import request
from proto.messages import MemoryCall, ToolRequest
from tests.memoryd_process import MemorydProcess

runner = CliRunner()


def call(memoryd, args, untrusted=False, call_id="c1"):
    req = ToolRequest(session="s-clean", call_id=call_id, tool="memory", arguments=json.dumps(args))
    reply = request(
        memoryd.broker_socket, MemoryCall(request=req, taint="private", untrusted=untrusted)
    )
    assert reply.ok, reply.output


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    yield proc
    proc.stop()


def bx(memoryd, *argv, input=None):
    env = {"BOXMAKER_HOME": str(memoryd.home)}
    return runner.invoke(app, list(argv), env=env, input=input)


def ok(result):
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def refused(result) -> str:
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def fill(memoryd):
    call(memoryd, {"action": "add", "file": "memory", "text": "Owner prefers UTC."}, call_id="a")
    call(memoryd, {"action": "add", "file": "user", "text": "The owner is Ada."}, call_id="b")
    call(memoryd, {"action": "note", "text": "The launch moved to Thursday."}, call_id="c")


def views(memoryd) -> list[str]:
    log = ok(bx(memoryd, "memory", "log", "20"))
    edits = json.loads(ok(bx(memoryd, "memory", "log", "20", "--json")))
    shows = [ok(bx(memoryd, "memory", "show", e["id"])) for e in edits["edits"]]
    return [log, ok(bx(memoryd, "memory", "block")), *shows]


def test_backup_copy_wipe_restore_gives_the_same_answers(memoryd, tmp_path):
    fill(memoryd)
    before = views(memoryd)
    copy = tmp_path / "saved.tar.gz"
    out = ok(bx(memoryd, "memory", "backup", str(copy)))
    assert "backup written to" in out and str(copy) in out
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    memoryd.stop()
    for folder in ("memory", "index", "backups"):
        shutil.rmtree(memoryd.home / folder)
    memoryd.start()
    out = ok(bx(memoryd, "memory", "restore", str(copy)))
    assert "restored" in out
    # the same answers, and the journal's last edit is the restore's own
    after = views(memoryd)
    assert after[0].splitlines()[:-1] == before[0].splitlines()
    assert "  owner  restore  " in after[0].splitlines()[-1]
    assert after[1:-1] == before[1:] and "action    restore" in after[-1]
    assert [p.name for p in (memoryd.home / "backups").iterdir()] == []  # the handed copy went
    edits = json.loads(ok(bx(memoryd, "memory", "log", "20", "--json")))["edits"]
    last_user = [e for e in edits if e["file"] == "user.md"][-1]["id"]
    assert "undid" in ok(bx(memoryd, "memory", "undo", last_user))


def test_backup_to_a_path_that_exists_is_refused_and_makes_nothing(memoryd, tmp_path):
    there = tmp_path / "there.tar.gz"
    there.write_bytes(b"mine")
    line = refused(bx(memoryd, "memory", "backup", str(there)))
    assert "exists" in line
    assert there.read_bytes() == b"mine"
    assert list((memoryd.home / "backups").iterdir()) == []


def test_restore_of_a_damaged_archive_is_one_line(memoryd, tmp_path):
    fill(memoryd)
    copy = tmp_path / "saved.tar.gz"
    ok(bx(memoryd, "memory", "backup", str(copy)))
    data = copy.read_bytes()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(data[: len(data) // 2])
    held = (memoryd.home / "memory" / "memory.md").read_bytes()
    line = refused(bx(memoryd, "memory", "restore", str(bad), "--replace"))
    assert "truncated" in line or "manifest" in line
    assert (memoryd.home / "memory" / "memory.md").read_bytes() == held
    line = refused(bx(memoryd, "memory", "restore", str(copy)))
    assert "--replace" in line


def test_export_and_import_through_bxctl(memoryd, tmp_path):
    fill(memoryd)
    printed = ok(bx(memoryd, "memory", "export"))
    items = [json.loads(line) for line in printed.splitlines()]
    assert items[0]["format"] == "boxmaker-memory-export" and len(items) == 4
    out = tmp_path / "export.jsonl"
    ok(bx(memoryd, "memory", "export", "--out", str(out)))
    assert out.read_text().splitlines()[1:] == printed.splitlines()[1:]  # the header has a time
    markdown = ok(bx(memoryd, "memory", "export", "--format", "markdown"))
    assert "Owner prefers UTC." in markdown
    dry = ok(bx(memoryd, "memory", "import", str(out), "--dry-run"))
    assert "already in memory.md" in dry and "nothing was written" in dry
    bad = tmp_path / "bad.jsonl"
    bad.write_text(printed.splitlines()[0] + "\n{}\n")
    assert "line 2" in refused(bx(memoryd, "memory", "import", str(bad)))


def test_forget_asks_first_and_then_forgets(memoryd):
    fill(memoryd)
    assert "note:0" in ok(bx(memoryd, "memory", "search", "launch"))  # numbers it shows now
    no = bx(memoryd, "memory", "forget", "note:0", input="n\n")
    assert no.exit_code == 1 and "cannot be undone" in no.stderr
    assert "The launch moved to Thursday." in no.stderr  # shown before the question
    notes = (memoryd.home / "memory" / "notes.md").read_text()
    assert "Thursday" in notes
    yes = ok(bx(memoryd, "memory", "forget", "note:0", input="y\n"))
    assert "Session logs are loopd's" in yes
    assert "Thursday" not in (memoryd.home / "memory" / "notes.md").read_text()
    out = ok(bx(memoryd, "memory", "forget", "memory.md:1", "--yes"))
    assert "forgot memory.md:1 (entry 1 of memory.md, counted from 1)" in out
    for root, _, files in os.walk(memoryd.home / "memory"):
        for name in files:
            data = open(os.path.join(root, name), "rb").read()
            assert b"Thursday" not in data and b"Owner prefers UTC." not in data
