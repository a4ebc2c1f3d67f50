"""What bxctl prints of memoryd's counts says one thing as one: "1 entry", "1 note", "1 problem",
never "1 entries" (a real memoryd, one entry and one note)."""

import json
import shutil
import sys

import pytest

from tests.bxctl.test_bxctl_data import call, ok, refused
from tests.bxctl.test_bxctl_owner import bx
from tests.memoryd_process import MemorydProcess


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    call(proc, {"action": "add", "file": "memory", "text": "Owner prefers UTC."}, call_id="a")
    call(proc, {"action": "note", "text": "The launch moved to Thursday."}, call_id="b")
    yield proc
    proc.stop()


def test_an_export_of_one_entry_and_one_note(memoryd, tmp_path):
    out = ok(bx(memoryd, "memory", "export", "--out", str(tmp_path / "one.jsonl")))
    assert "exported 1 entry and 1 note to " in out, out


def test_a_restore_over_one_entry_names_it_once(memoryd):
    made = json.loads(ok(bx(memoryd, "memory", "backup", "--json")))
    line = refused(bx(memoryd, "memory", "restore", made["path"]))
    assert "(1 entry in memory.md, " in line, line


def test_an_edit_with_one_problem(memoryd, tmp_path):
    script = tmp_path / "editor.py"
    script.write_text("import sys\nopen(sys.argv[1], 'w').write('ok\\n§\\nok\\n')\n")
    result = bx(memoryd, "memory", "edit", "memory", env={"EDITOR": f"{sys.executable} {script}"})
    assert result.exit_code == 1
    assert "was not changed; 1 problem:" in result.stderr, result.stderr
    kept = result.stderr.split("your copy is kept at ")[1].strip()
    shutil.rmtree(kept.rsplit("/", 1)[0])
