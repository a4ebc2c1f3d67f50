"""bxctl against the terminal it is given: a locale narrower than the memory (Latin-1, ASCII), a
stdin closed when forget asks, a stdout whose reader is gone. Each is an escape or one line on
stderr with the exit code that tells what happened, never a traceback."""

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from proto.server import serve_unix
from tests.bxctl.test_bxctl_failures import Answers


def run_bxctl(*argv: str, home: Path, env: dict | None = None, **kwargs):
    code = "from bxctl.cli import main; main()"
    environ = {**os.environ, "BOXMAKER_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    environ.pop("BOXMAKER_MEMORY_SOCKET", None)
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        stderr=subprocess.PIPE,
        env={**environ, **(env or {})},
        timeout=60,
        **kwargs,
    )


@pytest.fixture
def fake(tmp_path):
    answers = Answers(tmp_path)
    (tmp_path / "backups").mkdir()
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        serve_unix(answers.path, answers.handle, {"memory_admin"}, name="fake")
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield answers
    loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


WIDE = "Done \u2713 in \u6771\u4eac."


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
@pytest.mark.parametrize(
    ("argv", "command"),
    [(["memory", "block"], "block"), (["memory", "show", "2026-09-24-0001"], "show")],
)
def test_a_character_the_locale_cannot_show_is_escaped(fake, encoding, argv, command):
    fake.texts[command] = f"+ {WIDE}"
    result = run_bxctl(
        *argv, home=fake.home, stdout=subprocess.PIPE, env={"PYTHONIOENCODING": encoding}
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    assert result.stdout.decode(encoding) == "+ Done \\u{2713} in \\u{6771}\\u{4EAC}.\n"


FORGET_PREVIEW = json.dumps({"message": "would forget note:0", "texts": ["Zebra."], "check": "c"})


@pytest.mark.parametrize(
    "stdin", [{"preexec_fn": lambda: os.close(0)}, {"stdin": subprocess.DEVNULL}]
)
def test_forget_with_no_answer_to_its_question_forgets_nothing_in_one_line(fake, stdin):
    fake.texts["forget"] = FORGET_PREVIEW
    result = run_bxctl("memory", "forget", "note:0", home=fake.home, **stdin)
    assert result.returncode == 1
    err = result.stderr.decode()
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("bxctl: not forgotten: "), err
    assert err.endswith("nothing was changed\n"), err
    # only the preview was asked for, if anything: nothing was sent to be forgotten
    assert all(json.loads(m.arg).get("dry_run") is True for m in fake.seen)


def closed_pipe():
    """A pipe whose reader is gone (`| head -0`, a dead tee): its write end."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("where", ["closed pipe", "/dev/full"])
def test_a_change_whose_output_is_lost_is_said_to_be_done(fake, where):
    fake.texts["undo"] = "undid 2026-09-24-0001\n" * 20_000  # past any pipe's buffer
    out = closed_pipe() if where == "closed pipe" else os.open("/dev/full", os.O_WRONLY)
    try:
        result = run_bxctl("memory", "undo", "2026-09-24-0001", home=fake.home, stdout=out)
    finally:
        os.close(out)
    assert result.returncode == 4  # not 1, "refused": the undo stands
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("bxctl: the undo was done, but its output could not be written: "), line
    assert line.endswith("bxctl memory log shows what was applied"), line


def test_a_read_whose_reader_is_gone_says_so_in_one_line(fake):
    fake.texts["log"] = "2026-09-24-0001 entry\n" * 20_000
    out = closed_pipe()
    try:
        result = run_bxctl("memory", "log", home=fake.home, stdout=out)
    finally:
        os.close(out)
    assert result.returncode == 4
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("bxctl: the output could not be written: "), line
    assert line.endswith("; nothing was changed"), line
