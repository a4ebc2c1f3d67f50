"""A mistyped option, command or value to memoryd, brokerd-shim or loopd-shim (the driver the owner
types every day) is one line on stderr and exit 2, as bxctl's and memory-mcp's are: never typer's
usage, "Try --help" and boxed error, four lines or more wrapped to the terminal. Each runs as the
installed console script, in a terminal-like environment where typer would draw its box."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

# program, the words typed, what the one line must name
MISTAKES = [
    # unknown option
    ("memoryd", ["serve", "--bogus"], "No such option: --bogus (see: memoryd serve --help)"),
    ("brokerd-shim", ["serve", "--bogus"], "No such option: --bogus"),
    ("loopd-shim", ["start", "--sesion", "x"], "No such option: --sesion"),
    ("loopd-shim", ["--bogus"], "No such option: --bogus (see: loopd-shim --help)"),
    # unknown command
    ("memoryd", ["sever"], "No such command 'sever'."),
    ("brokerd-shim", ["bogus"], "No such command 'bogus'."),
    ("loopd-shim", ["sya", "s1", "hello"], "No such command 'sya'."),
    # missing argument, command or option value
    ("memoryd", [], "Missing command. (see: memoryd --help)"),
    ("memoryd", ["serve", "--config"], "Option '--config' requires an argument."),
    ("brokerd-shim", [], "Missing command."),
    ("brokerd-shim", ["serve", "--config"], "Option '--config' requires an argument."),
    ("loopd-shim", ["answer"], "Missing argument 'session'. (see: loopd-shim answer --help)"),
    ("loopd-shim", ["say", "s1"], "Missing argument 'text'."),
    ("loopd-shim", ["answer", "s1", "--call"], "Option '--call' requires an argument."),
    # a value where none is taken, or one too many
    ("memoryd", ["--version=yes"], "Option '--version' does not take a value."),
    ("brokerd-shim", ["serve", "surplus"], "Got unexpected extra argument(s) (surplus)"),
    ("loopd-shim", ["baseline", "s1", "--tools=3"], "Option '--tools' does not take a value."),
    ("loopd-shim", ["say", "s1", "hi", "surplus"], "Got unexpected extra argument(s) (surplus)"),
]

# typer draws its box in colour, wrapped to a narrow terminal, when it thinks it has one
TERMINAL = {"COLUMNS": "60", "TERM": "xterm", "FORCE_COLOR": "1"}


def _run(program: str, args: list[str], home: Path) -> subprocess.CompletedProcess[bytes]:
    script = Path(sys.executable).with_name(program)
    env = {**os.environ, **TERMINAL, "BOXMAKER_HOME": str(home)}
    return subprocess.run(
        [str(script), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        cwd=home,
        env=env,
    )


@pytest.mark.parametrize(
    ("program", "args", "named"), MISTAKES, ids=[" ".join([p, *a]) for p, a, _ in MISTAKES]
)
def test_a_usage_error_is_one_line_naming_the_mistake_and_exit_2(tmp_path, program, args, named):
    result = _run(program, args, tmp_path)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert result.stdout == b""
    [line] = stderr.splitlines()
    assert line.startswith(f"{program}: ") and named in line, line
    assert "\x1b" not in line and "─" not in line and "Usage" not in line, line


@pytest.mark.parametrize("program", ["memoryd", "brokerd-shim", "loopd-shim"])
def test_what_the_owner_typed_reaches_the_terminal_escaped(tmp_path, program):
    result = _run(program, ["--\x1b[2J\u200b"], tmp_path)
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"{program}: No such option: --\\x1b[2J\\u{{200B}} (see: {program} --help)\n"
    )


@pytest.mark.parametrize("program", ["memoryd", "brokerd-shim", "loopd-shim"])
def test_help_and_version_still_print_and_exit_0(tmp_path, program):
    helped = _run(program, ["--help"], tmp_path)
    assert helped.returncode == 0 and helped.stderr == b""
    assert b"serve" in helped.stdout
    version = _run(program, ["--version"], tmp_path)
    assert version.returncode == 0 and version.stderr == b""
    assert version.stdout.decode().startswith(f"{program} ")


def test_the_driver_without_a_command_prints_its_help(tmp_path):
    # as before: its help is the answer to no arguments, with typer's status for it
    result = _run("loopd-shim", [], tmp_path)
    assert result.returncode == 2 and result.stderr == b""
    assert b"baseline" in result.stdout


def test_a_refusal_of_the_driver_keeps_its_own_line_and_status(tmp_path):
    # a command's own exit (typer.Exit) passes through with its status, not as a usage error
    result = _run("loopd-shim", ["baseline", "nosuch", "--home", str(tmp_path)], tmp_path)
    assert result.returncode == 1
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("loopd-shim: ") and "nosuch" in line, line
