"""Every command's output that cannot be written (stdout on a full disk, a pipe whose reader is
gone, a stdout closed before it started) is one line on stderr naming why, and exit 4 as
bxctl's, never a traceback: --version and --help of each role, memory-mcp's config-snippet.
An error of another file than stdout is not taken for lost output."""

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from proto import usage

BIN = Path(sys.executable).parent
FULL = "No space left on device"

COMMANDS = [
    ["memoryd", "--help"],
    ["brokerd-shim", "--version"],
    ["loopd-shim", "--help"],
    ["memory-mcp", "--version"],
    ["memory-mcp", "config-snippet", "--home", "/tmp"],
]


def _one_line(ran, prog: str, why: str) -> None:
    assert ran.returncode == 4, ran.stderr
    assert ran.stderr == f"{prog}: the output could not be written: {why}\n"


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_full_disk_is_one_line(argv):
    with open("/dev/full", "w") as full:
        ran = subprocess.run(
            [str(BIN / argv[0]), *argv[1:]], stdout=full, stderr=subprocess.PIPE, text=True
        )
    _one_line(ran, argv[0], FULL)


def test_a_reader_gone_is_one_line():
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w") as gone:
        ran = subprocess.run(
            [str(BIN / "loopd-shim"), "--version"], stdout=gone, stderr=subprocess.PIPE, text=True
        )
    _one_line(ran, "loopd-shim", "Broken pipe (the reader of the output is gone)")


def test_a_closed_stdout_is_one_line():
    ran = subprocess.run(
        ["bash", "-c", 'exec >&-; exec "$0" --version', str(BIN / "brokerd-shim")],
        stderr=subprocess.PIPE,
        text=True,
    )
    _one_line(ran, "brokerd-shim", "the standard output is closed")


def test_a_full_disk_under_another_file_stays_its_own_error(tmp_path, monkeypatch):
    app = typer.Typer()

    @app.command()
    def write() -> None:
        raise OSError(errno.ENOSPC, FULL, str(tmp_path / "journal"))

    with pytest.raises(OSError, match="journal"):
        monkeypatch.setattr(sys, "argv", ["prog"])
        usage.run(app, "prog")
