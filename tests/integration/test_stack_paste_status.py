"""scripts/stack in process mode, for what it prints: the lines `up` gives the owner to paste
keep every path one shell word (a home under a folder with a space, a quote or an accent), and
`status` keeps its bound (one 5 s check per role) whatever memoryd does, saying in one line why
it shows no embedding progress.
"""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.stack import REPO, short_temp_home

STACK = REPO / "scripts" / "stack"
VENV = REPO / ".venv"
# status with one stuck role: its 5 s check plus a few short Python starts on a busy machine.
STATUS_BOUND = 20


def quoted(word: str) -> str:
    done = subprocess.run(
        ["bash", "-c", '. "$1"; shell_quoted "$2"', "_", REPO / "scripts/common.sh", word],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize(
    ("word", "plain"),
    [
        ("/home/ann/.local/home", True),
        ("/srv/a-b_c/x.y:z@1%2+3,4=5", True),
        ("/tmp/x y/home", False),
        ("/media/ann/Seagate Backup", False),
        ("/home/ann/Ann's memory", False),
        ('/tmp/say "hi"', False),
        ("/home/zoë/mémoire", False),
        ("/tmp/$HOME/`id`/!x/*", False),
        ("~ann", False),
        ("", False),
        ("/tmp/two\nlines", False),
    ],
)
def test_a_printed_path_is_one_shell_word(word, plain):
    text = quoted(word)
    assert (text == word) is plain, text
    for shell in ["bash", "sh"] if "\n" not in word else ["bash"]:
        back = subprocess.run(
            [shell, "-c", f"printf '%s' {text}"], capture_output=True, text=True, timeout=30
        )
        assert back.returncode == 0 and back.stdout == word, (shell, text, back)


def fake_venv(root: Path) -> Path:
    """The venv, but with a bxctl that never answers (a memoryd busy past any patience)."""
    bin_dir = root / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "memoryd", "brokerd-shim", "loopd-shim"):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{VENV / "bin" / name}" "$@"\n')
    (bin_dir / "bxctl").write_text("#!/bin/sh\nexec sleep 60\n")
    for path in bin_dir.iterdir():
        path.chmod(0o700)
    return root / "venv"


class ProcessStack:
    """scripts/stack up in process mode on a home and settings folder under a folder whose name
    holds a space, a quote and an accent; down and removed at the end."""

    def __init__(self):
        self.root = short_temp_home("bx stack 'é-")
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOXMAKER_")}
        env.pop("VENV", None)
        self.env = {
            **env,
            "BOXMAKER_HOME": os.fspath(self.root / "my home"),
            "BOXMAKER_CONFIG": os.fspath(self.root / "my settings"),
            "BOXMAKER_STACK_STATE": os.fspath(self.root / "state"),
            "BOXMAKER_STACK": "process",
        }
        self.plain = env  # the owner's shell before pasting

    def run(self, args, env=None, timeout=300) -> subprocess.CompletedProcess:
        return subprocess.run(
            args,
            env=self.env if env is None else env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def status(self, env=None) -> tuple[subprocess.CompletedProcess, float]:
        start = time.monotonic()
        done = self.run([STACK, "status"], env, timeout=120)
        return done, time.monotonic() - start


@pytest.fixture
def stack():
    made = ProcessStack()
    try:
        made.up = made.run([STACK, "up"])
        assert made.up.returncode == 0, made.up.stderr[-3000:]
        yield made
    finally:
        down = made.run([STACK, "down"])
        shutil.rmtree(made.root, ignore_errors=True)
    assert down.returncode == 0, down.stderr


def test_the_lines_to_paste_work_on_a_home_with_a_space(stack):
    lines = [line.strip() for line in stack.up.stdout.splitlines()]
    [export] = [line for line in lines if line.startswith("export ")]
    [snippet] = [line for line in lines if " config-snippet --home " in line]
    then = 'printf "%s\\n" "$BOXMAKER_HOME"\ncommand -v bxctl\nbxctl memory log >/dev/null'
    pasted = stack.run(["bash", "-c", f"{export}\n{then}"], stack.plain)
    assert pasted.returncode == 0, (export, pasted.stderr)
    assert pasted.stdout.splitlines() == [stack.env["BOXMAKER_HOME"], f"{VENV}/bin/bxctl"]
    registered = stack.run(["bash", "-c", snippet], stack.plain)
    assert registered.returncode == 0, (snippet, registered.stderr)
    [server] = json.loads(registered.stdout)["mcpServers"].values()
    assert server["args"][:2] == ["--home", stack.env["BOXMAKER_HOME"]], server


def test_status_keeps_its_bound_whatever_memoryd_does(stack):
    # memoryd stuck: its check says so in 5 s and nothing else waits on it.
    pid = int((stack.root / "state/memoryd.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        stuck, took = stack.status()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert took < STATUS_BOUND, f"status took {took:.1f} s with memoryd stuck"
    assert stuck.returncode == 1 and "memoryd: unhealthy: " in stuck.stdout, stuck.stdout
    assert "embedding: not asked: memoryd is unhealthy (above)" in stuck.stdout
    assert "index: not asked: memoryd is unhealthy (above)" in stuck.stdout

    # Running again, in mode spec: nothing to ask, and one line says why.
    healthy, _ = stack.status()
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "embedding: none: recall mode spec (only mode hybrid embeds)" in healthy.stdout
    assert "\nindex: every session log indexed\n" in healthy.stdout, healthy.stdout

    # In mode hybrid a healthy memoryd is asked, for at most 5 s.
    conf = stack.root / "state/config/memoryd.toml"
    conf.write_text(conf.read_text() + '\n[recall]\nmode = "hybrid"\n')
    slow, took = stack.status({**stack.env, "VENV": os.fspath(fake_venv(stack.root))})
    assert slow.returncode == 0, slow.stdout + slow.stderr
    assert (
        "embedding: not shown: memoryd did not answer bxctl memory stats within 5 s" in slow.stdout
    ), slow.stdout
    assert "index: not shown: memoryd did not answer bxctl memory stats within 5 s" in slow.stdout
    assert took < STATUS_BOUND, f"status took {took:.1f} s on a slow bxctl memory stats"
