"""Long owner answers are paged under one frame, against a real memoryd.

Hundreds of staged edits of 2,100 characters, and a journal whose last 10,000 lines exceed a frame:
bxctl memory pending and bxctl memory log 10000 answer, say how many there are and the command
that shows the rest, and following those commands shows every item once.
"""

import json
import re
import time

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from proto.client import request
from proto.frames import MAX_FRAME
from proto.messages import MemoryAdmin, MemoryCall, ToolRequest
from tests.memoryd_process import MemorydProcess

runner = CliRunner()
STAGED = 300


def bx(memoryd, *argv):
    return runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})


def staged_home(tmp_path):
    """A home whose pending.jsonl holds STAGED edits of 2,100 characters (as review mode stages
    them, written directly so the test does not spend minutes staging)."""
    proc = MemorydProcess(tmp_path, "[memory]\nreview = true\n")
    pending = proc.home / "memory" / "pending.jsonl"
    pending.parent.mkdir(parents=True, mode=0o700)
    with open(pending, "w") as f:
        for n in range(1, STAGED + 1):
            text = f"{n:04d} " + "w" * 2_095
            item = {
                "id": f"p-2026-09-24-{n:04d}",
                "time": "2026-09-24T10:00:00Z",
                "session": "s-clean",
                "call": f"c{n}",
                "taint": "private",
                "untrusted": False,
                "action": "add",
                "file": "memory.md",
                "args": {"action": "add", "file": "memory", "text": text},
            }
            f.write(json.dumps(item) + "\n")
    return proc


@pytest.fixture
def staged(tmp_path):
    proc = staged_home(tmp_path).start()
    yield proc
    proc.stop()


def test_pending_with_hundreds_of_long_edits_answers_in_pages(staged):
    # One more staged through the broker, as a session would.
    req = ToolRequest(
        session="s-clean",
        call_id="c-last",
        tool="memory",
        arguments=json.dumps({"action": "add", "file": "memory", "text": "x" * 2_100}),
    )
    assert request(staged.broker_socket, MemoryCall(request=req, taint="private", untrusted=False))
    seen: list[str] = []
    argv = ["memory", "pending"]
    pages = 0
    while True:
        result = bx(staged, *argv)
        assert result.exit_code == 0, result.stderr
        assert len(result.stdout.encode()) < MAX_FRAME
        ids = re.findall(r"^(p-\d{4}-\d{2}-\d{2}-\d{4})  ", result.stdout, re.M)
        seen += ids
        pages += 1
        rest = re.search(r"to see the rest: bxctl (memory pending --from (\S+))\)", result.stdout)
        if rest is None:
            break
        assert f"{STAGED + 1:,} edits are waiting for review; showing {len(ids):,}" in result.stdout
        argv = rest.group(1).split()
    assert pages > 1
    assert len(seen) == STAGED + 1 and len(set(seen)) == STAGED + 1
    # JSON pages the same way.
    data = json.loads(bx(staged, "memory", "pending", "--json").stdout)
    assert data["waiting"] == STAGED + 1 and data["shown"] < data["waiting"]
    assert data["rest"].startswith("bxctl memory pending --from p-")


def test_a_pending_id_that_is_not_waiting_is_refused(staged):
    result = bx(staged, "memory", "pending", "--from", "p-2020-01-01-0001")
    assert result.exit_code == 1 and "no edit p-2020-01-01-0001 is waiting" in result.stderr


def test_log_10000_over_a_frame_answers_in_pages(tmp_path):
    proc = MemorydProcess(tmp_path)
    edits = proc.home / "memory" / "edits"
    edits.mkdir(parents=True, mode=0o700)
    session = "s-" + "a" * 126
    month = time.strftime("%Y-%m", time.gmtime())
    with open(edits / f"{month}.jsonl", "w") as f:
        for n in range(1, 12_001):
            line = {
                "id": f"{month}-01-{n:05d}",
                "time": f"{month}-01T00:00:00Z",
                "session": session,
                "call": "c",
                "action": "note",
                "file": None,
                "to": "notes.md",
                "before": [],
                "after": ["n"],
            }
            f.write(json.dumps(line) + "\n")
    proc.start()
    try:
        raw = request(proc.admin_socket, MemoryAdmin(command="log", arg="10000"))
        assert len(raw.text.encode()) < MAX_FRAME
        result = bx(proc, "memory", "log", "10000")
        assert result.exit_code == 0, result.stderr
        first = re.findall(r"^(\S+)  ", result.stdout, re.M)
        assert first[0] == f"{month}-01-02001"
        rest = re.search(r"to see the rest: bxctl (memory log (\d+) --from (\S+))\)", result.stdout)
        assert rest and "(showing " in result.stdout and " of 10,000 edits" in result.stdout
        second = bx(proc, *rest.group(1).split())
        assert second.exit_code == 0
        more = re.findall(r"^(\S+)  ", second.stdout, re.M)
        assert more[0] == rest.group(3) and int(rest.group(2)) == 10_000 - len(first)
        # With --from the window starts there, whatever N says.
        from_start = bx(proc, "memory", "log", "2", "--from", f"{month}-01-00005").stdout
        assert re.findall(r"^(\S+)  ", from_start, re.M) == [
            f"{month}-01-00005",
            f"{month}-01-00006",
        ]
    finally:
        proc.stop()
