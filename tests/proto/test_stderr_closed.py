"""Started with stderr closed (2>&-), memoryd, brokerd-shim and loopd-shim never write an error
line into stdout, the file the owner sent the answer to (a prompt, an export): a failing command
fails by its status without a word, as bxctl does, and a command that works still answers."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

# program, the words typed, the status
FAILING = [
    ("loopd-shim", ["baseline", "--nosuch"], 2),  # a usage slip
    ("brokerd-shim", ["--nosuch"], 2),
    ("memoryd", ["serve", "--config", "missing.toml"], 2),  # memoryd's "cannot start"
    ("loopd-shim", ["baseline", "no-such-session"], 1),  # a command's own error line
]


def _closed_stderr(program: str, args: list[str], home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", 'exec 2>&-; exec "$0" "$@"', str(BIN / program), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        timeout=60,
        cwd=home,
        env={**os.environ, "BOXMAKER_HOME": str(home / "home")},
    )


@pytest.mark.parametrize(
    ("program", "args", "status"), FAILING, ids=[" ".join([p, *a]) for p, a, _ in FAILING]
)
def test_an_error_with_stderr_closed_never_lands_in_stdout(tmp_path, program, args, status):
    ran = _closed_stderr(program, args, tmp_path)
    assert (ran.returncode, ran.stdout) == (status, b"")


def test_a_command_that_works_still_answers_with_stderr_closed(tmp_path):
    ran = _closed_stderr("brokerd-shim", ["--version"], tmp_path)
    assert ran.returncode == 0 and ran.stdout.startswith(b"brokerd-shim")
