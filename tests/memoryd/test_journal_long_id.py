"""An id whose number runs past nine digits (a journal or pending line damaged or edited by hand,
thousands of digits long) is no id: its line is damaged, said and passed over as any other. A
write after it is applied and journalled, or refused with nothing applied, never applied and
answered as failed; memoryd starts over it; and a start that meets an error it did not foresee
says so in one line."""

import json
import os
import subprocess
import sys

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal import idform
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock
from tests.memoryd_process import MemorydProcess

DAY = "2026-09-24"
LONG = f"{DAY}-" + "1" * 5000  # past int()'s 4,300 digits


def _line(edit_id: str) -> str:
    return json.dumps(
        {
            "id": edit_id,
            "time": f"{DAY}T00:00:00Z",
            "session": "s1",
            "call": "cx",
            "taint": "private",
            "untrusted": False,
            "action": "note",
            "file": None,
            "to": "notes.md",
            "before": [],
            "after": ["x"],
            "notes": [{"kind": "noted", "text": "x"}],
        }
    )


def _month(md: Memoryd):
    (month,) = md.home.edits.glob("*.jsonl")
    return month


def _journalled(md: Memoryd) -> list[dict]:
    return [json.loads(raw) for raw in _month(md).read_text().splitlines()]


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock())
    m.call({"action": "add", "file": "memory", "text": "First entry."})
    yield m
    m.close()


def test_a_write_after_a_line_with_an_over_long_id_is_applied_and_journalled(md):
    with _month(md).open("a") as f:
        f.write(_line(LONG) + "\n")
    said = md.call({"action": "add", "file": "memory", "text": "Second entry."})
    assert said.startswith("memory.md updated")
    assert "Second entry." in md.home.memory_file("memory.md").read_text()
    last = _journalled(md)[-1]
    assert (last["id"], last["after"][-1]) == (f"{DAY}-0002", "Second entry.")
    assert not (md.home.memory / ".writing.json").exists()  # no intent left behind
    listed = md.admin("log")
    assert f"{DAY}-0002" in listed and "1" * 10 not in listed
    assert f"(1 damaged journal line not listed, in {_month(md)}: it does not parse;" in listed
    md.call({"action": "note", "text": "A note after it."})
    assert _journalled(md)[-1]["id"] == f"{DAY}-0003"


@pytest.mark.parametrize("command", ["show", "undo"])
def test_an_over_long_id_named_to_show_or_undo_is_no_edit_id(md, command):
    arg = {"id": LONG} if command == "show" else LONG
    with pytest.raises(AdminRefused, match="^refused: .*(not an edit id|at most 64)"):
        md.admin(command, arg)


def test_a_day_whose_ids_are_used_up_refuses_the_write_with_nothing_applied(md):
    with _month(md).open("a") as f:
        f.write(_line(f"{DAY}-{idform.NUMBER_MOST}") + "\n")
    before = md.home.memory_file("memory.md").read_bytes()
    lines = len(_journalled(md))
    with pytest.raises(Exception, match="not applied: .*the last id a day can have"):
        md.call({"action": "add", "file": "memory", "text": "Second entry."})
    assert md.home.memory_file("memory.md").read_bytes() == before
    assert len(_journalled(md)) == lines


def test_a_pending_line_with_an_over_long_id_does_not_stop_staging(tmp_path):
    md = Memoryd(tmp_path / "home", clock=Clock())
    try:
        md.store.review_on = True
        pending = md.home.memory_file("pending.jsonl")
        pending.write_text(json.dumps({"id": "p-" + LONG, "time": f"{DAY}T00:00:00Z"}) + "\n")
        said = md.call({"action": "add", "file": "memory", "text": "Waits for review."})
        assert f"pending as p-{DAY}-0001" in said
        assert f"p-{DAY}-0001" in pending.read_text()
        shown = md.admin("pending")
        assert f"p-{DAY}-0001" in shown and "1" * 10 not in shown and "damaged" in shown
    finally:
        md.close()


def test_memoryd_starts_over_a_journal_line_with_an_over_long_id(tmp_path):
    memoryd = MemorydProcess(tmp_path)
    edits = memoryd.home / "memory" / "edits"
    edits.mkdir(parents=True, mode=0o700)
    month = edits / f"{DAY[:7]}.jsonl"
    month.write_text(_line(f"{DAY}-0001") + "\n" + _line(LONG) + "\n")
    month.chmod(0o600)
    memoryd.start()
    try:
        assert memoryd.proc.poll() is None
    finally:
        assert memoryd.stop() == 0
    assert "Traceback" not in memoryd.log.read_text()


def test_an_unforeseen_error_at_start_is_the_start_failure_line(tmp_path):
    memoryd = MemorydProcess(tmp_path)
    code = (
        "import sys, memoryd.cli as cli\n"
        "def boom(cfg):\n"
        "    raise ValueError('Exceeds the limit (4300 digits)\\nfor integer string conversion')\n"
        "cli.prepare = boom\n"
        "sys.argv = ['memoryd', 'serve', '--config', sys.argv[1]]\n"
        "cli.main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(memoryd.config)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "BOXMAKER_HOME": str(memoryd.home)},
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [ln for ln in result.stderr.splitlines() if "cannot start" in ln]
    assert lines == [
        "memoryd: cannot start: an unexpected error at <string>:3: ValueError: Exceeds the "
        "limit (4300 digits) for integer string conversion (runbook: memoryd-start-failed)"
    ]
