"""bxctl memory edit whose copy is gone when the editor returns (the editor's own delete, a
cleaner of temporary files): one line saying the copy is gone and nothing was changed, and to
run the command again, never that a copy is kept; the empty folder it was in goes too. A copy
that is there but cannot be read is kept, and said so without Python's error text."""

import os
import subprocess
import sys
from pathlib import Path

from tests.bxctl.test_bxctl_signals import serving
from tests.bxctl.test_edit_stopped_copy import answering

REMOVES = "import pathlib, sys\npathlib.Path(sys.argv[-1]).unlink()\n"
BXCTL = "from bxctl.cli import main; main()"
NOT_UTF8 = "import pathlib, sys\npathlib.Path(sys.argv[-1]).write_bytes(b'caf\\xe9\\n')\n"


def edit_with(tmp_path: Path, editor_code: str) -> tuple[subprocess.CompletedProcess, Path]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    editor = tmp_path / "editor.py"
    editor.write_text(editor_code)
    with serving(answering(tmp_path)) as fake:
        env = {
            **os.environ,
            "BOXMAKER_HOME": str(fake.home),
            "PYTHONPATH": os.pathsep.join(sys.path),
            "TMPDIR": str(tmp),
            "EDITOR": f"{sys.executable} {editor}",
        }
        env.pop("BOXMAKER_MEMORY_SOCKET", None)
        env.pop("VISUAL", None)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from bxctl.cli import main; main()",
                "memory",
                "edit",
                "memory",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert [m.command for m in fake.seen] == ["file"]  # nothing sent back
    return done, tmp


def test_a_copy_removed_while_the_editor_ran_is_said_gone(tmp_path):
    done, tmp = edit_with(tmp_path, REMOVES)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("bxctl: the copy ") and "kept" not in lines[0]
    assert lines[0].endswith(
        "/memory.md is gone (removed while the editor ran); nothing was changed:"
        " run bxctl memory edit memory again"
    ), lines[0]
    assert os.listdir(tmp) == []  # its empty folder removed too


def test_a_copy_not_utf8_is_kept_and_said_without_errno_text(tmp_path):
    done, tmp = edit_with(tmp_path, NOT_UTF8)
    assert done.returncode == 1
    (folder,) = os.listdir(tmp)
    copy = tmp / folder / "memory.md"
    assert done.stderr == f"bxctl: cannot read the copy {copy}: not UTF-8 text; it is kept\n"
    assert copy.read_bytes() == b"caf\xe9\n"
