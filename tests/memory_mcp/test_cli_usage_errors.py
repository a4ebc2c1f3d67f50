"""A wrong option or argument of memory-mcp is one line on stderr and exit status 2, never typer's
box of several lines: the MCP client keeps that stderr as its log, and a pipe is no terminal."""

import os
import subprocess
import sys

import pytest

WRONG = [
    ["--trust", "bogus"],
    ["--timeout", "abc"],
    ["--timeout", "0"],
    ["--class", "x"],
    ["--max-class", "top"],
    ["--no-such-option"],
    ["extra-argument"],
    ["config-snippet", "--trust", "bogus"],
    ["config-snippet", "--command"],
    ["trust-again"],
    ["trust-again", "--client", "c", "surplus"],
]


@pytest.mark.parametrize("args", WRONG, ids=" ".join)
def test_a_wrong_option_is_one_line_and_exit_2(tmp_path, args):
    result = subprocess.run(
        [sys.executable, "-m", "memory_mcp", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "60", "TERM": "xterm", "FORCE_COLOR": "1"},
    )
    assert result.returncode == 2, result.stderr.decode()
    assert result.stdout == b""
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("memory-mcp: ") and "\x1b" not in line and "─" not in line, line


def test_help_is_still_printed_and_exits_0():
    result = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--help"], capture_output=True, timeout=60
    )
    assert result.returncode == 0
    assert b"config-snippet" in result.stdout and result.stderr == b""
