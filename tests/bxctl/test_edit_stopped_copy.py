"""bxctl memory edit stopped while $EDITOR runs (SIGTERM, SIGHUP: a closed terminal, a logout)
leaves no unnamed copy of memory.md in $TMPDIR, where a forget never reaches it: a copy
the owner did not change is removed, said in one line; one he saved changes into is kept and
named. A bxctl killed outright runs no clean-up: the next edit removes the copies of a gone bxctl
that hold only what they were given, and names one that holds changes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bxctl.test_bxctl_reach import Held
from tests.bxctl.test_bxctl_signals import from_a_terminal, serving

TEXT = "a private entry\n"
STOPS = [signal.SIGTERM, signal.SIGHUP]
EDITOR = """
import os, sys, time, pathlib
copy = pathlib.Path(sys.argv[-1])
if sys.argv[1] == "change":
    copy.write_text("a private entry\\nthe owner's own line\\n")
pathlib.Path(sys.argv[2]).write_text(f"{os.getpid()} {copy}")
time.sleep(60)
"""


def edit(fake: Held, tmp: Path, how: str) -> tuple[subprocess.Popen, Path, int]:
    """bxctl memory edit started with an editor that waits (having changed the copy or not);
    bxctl, the copy, and the editor's process id."""
    editor = tmp.parent / "editor.py"
    editor.write_text(EDITOR)
    mark = tmp.parent / "editing"
    mark.unlink(missing_ok=True)
    env = {
        **os.environ,
        "BOXMAKER_HOME": str(fake.home),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "TMPDIR": str(tmp),
        "EDITOR": f"{sys.executable} {editor} {how} {mark}",
    }
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    env.pop("VISUAL", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from bxctl.cli import main; main()", "memory", "edit", "memory"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=from_a_terminal,
    )
    for _ in range(300):
        said = mark.read_text() if mark.exists() else ""
        if said:
            pid, copy = said.split(" ", 1)
            return proc, Path(copy), int(pid)
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the editor never ran: {proc.communicate()}")


def answering(tmp_path: Path) -> Held:
    fake = Held(tmp_path / "home")
    fake.hold = False
    fake.texts["file"] = json.dumps({"file": "memory.md", "text": TEXT, "base": "0" * 64})
    return fake


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: s.name)
def test_a_stop_while_the_editor_runs_removes_the_unchanged_copy_and_says_so(tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serving(answering(tmp_path)) as fake:
        proc, copy, _ = edit(fake, tmp, "keep")
        assert copy.read_text() == TEXT
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig and out == ""
    assert "bxctl: the copy of memory.md made for the editor was removed\n" in err
    assert os.listdir(tmp) == []
    assert [m.command for m in fake.seen] == ["file"]


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: s.name)
def test_a_stop_after_the_owner_saved_changes_keeps_the_copy_and_names_it(tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serving(answering(tmp_path)) as fake:
        proc, copy, _ = edit(fake, tmp, "change")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig
    assert f"bxctl: your copy, with changes never sent, is kept at {copy}\n" in err
    assert "the owner's own line" in copy.read_text()


def test_the_next_edit_clears_what_a_killed_bxctl_left(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serving(answering(tmp_path)) as fake:
        left = []
        for how in ("keep", "change"):
            proc, copy, editor = edit(fake, tmp, how)
            proc.kill()  # SIGKILL: no clean-up runs (the editor goes on until it is ended)
            proc.wait()
            os.kill(editor, signal.SIGKILL)
            left.append(copy)
        proc, copy, _ = edit(fake, tmp, "keep")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    unchanged, changed = left
    assert not unchanged.parent.exists()  # held nothing but memory.md's text: removed
    assert changed.exists() and "the owner's own line" in changed.read_text()
    assert f"changes never sent: {changed} (" in err
    assert os.listdir(tmp) == [changed.parent.name]


def test_ctrl_c_while_the_editor_runs_is_the_editors(tmp_path):
    """Ctrl-C reaches the editor as well (one process group): vim cancels a command with it. bxctl
    lets it pass and waits on; the editor goes on, and a stop still ends both."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serving(answering(tmp_path)) as fake:
        proc, copy, editor = edit(fake, tmp, "keep")
        proc.send_signal(signal.SIGINT)
        time.sleep(1)
        assert proc.poll() is None, proc.communicate()
        os.kill(editor, 0)  # still running
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "bxctl: the copy of memory.md made for the editor was removed\n" in err
