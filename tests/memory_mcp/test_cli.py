"""The memory-mcp command: the registration snippet, option checks, a missing SDK, closing."""

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from memory_mcp.cli import NO_SDK, TRUSTED_WARNING, app


def run(*args: str, stdin: bytes = b"", code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "memory_mcp", *args]
    if code is not None:
        command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60, env=os.environ)


def test_config_snippet_registers_the_server_with_the_home_and_trust(tmp_path):
    program = tmp_path / "x/mm"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    result = CliRunner().invoke(
        app,
        [
            "config-snippet",
            "--home",
            str(tmp_path),
            "--trust",
            "trusted",
            "--command",
            str(program),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [TRUSTED_WARNING]
    assert json.loads(result.stdout) == {
        "mcpServers": {
            "boxmaker-memory-trusted": {
                "command": str(program),
                "args": ["--home", str(tmp_path), "--trust", "trusted", "--class", "private"],
            }
        }
    }


def test_config_snippet_defaults_to_untrusted_and_an_absolute_home_and_command(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel/home").mkdir(parents=True)
    result = CliRunner().invoke(app, ["config-snippet", "--home", "rel/home"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # the default promises nothing, so nothing to warn of
    server = json.loads(result.output)["mcpServers"]["boxmaker-memory"]
    assert server["args"] == [
        "--home",
        str(tmp_path / "rel/home"),
        "--trust",
        "untrusted",
        "--class",
        "private",
    ]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).name == "memory-mcp"


def test_wrong_options_are_refused_before_serving():
    for args in (
        ["--trust", "maybe"],
        ["--class", "top"],
        ["--timeout", "0"],
        ["--timeout", "nan"],
        ["--block-socket", "/tmp/x.sock"],  # gone: the block is read from {home}/memory
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)


def test_without_the_sdk_it_says_which_extra_to_install():
    code = "import sys; sys.modules['mcp'] = None; from memory_mcp.cli import main; main()"
    result = run(code=code)
    assert result.returncode == 1
    assert result.stderr.decode().strip() == NO_SDK
    assert result.stdout == b""


def test_stdin_closed_ends_the_server_with_nothing_on_stdout(tmp_path):
    result = run("--home", str(tmp_path))
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b""
    assert b"serving MCP on stdio" in result.stderr


def test_config_snippet_refuses_without_a_home_that_is_a_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("BOXMAKER_HOME", raising=False)
    (tmp_path / "file").write_text("x")
    cases = [
        ([], {}, "no home to register: pass --home PATH"),
        ([], {"BOXMAKER_HOME": str(tmp_path / "gone")}, f"BOXMAKER_HOME {tmp_path / 'gone'} is"),
        (["--home", str(tmp_path / "file")], {}, f"--home {tmp_path / 'file'} is not a folder"),
    ]
    for args, env, said in cases:
        result = CliRunner().invoke(app, ["config-snippet", *args], env=env)
        assert result.exit_code == 2, (args, env, result.output)
        [line] = result.output.splitlines()
        assert line.startswith("memory-mcp: ") and said in line, line
    monkeypatch.setenv("BOXMAKER_HOME", str(tmp_path))
    taken = CliRunner().invoke(app, ["config-snippet"])
    assert taken.exit_code == 0, taken.output
    assert json.loads(taken.output)["mcpServers"]["boxmaker-memory"]["args"][1] == str(tmp_path)


def test_config_snippet_is_valid_ascii_json_whatever_the_path_holds(tmp_path):
    home = tmp_path / 'a "quoted" \\ back\nline \x1b[31m red \u202e ü'
    home.mkdir()
    result = CliRunner().invoke(app, ["config-snippet", "--home", str(home)])
    assert result.exit_code == 0, result.output
    assert result.output.isascii() and "\x1b" not in result.output
    assert json.loads(result.output)["mcpServers"]["boxmaker-memory"]["args"][1] == str(home)


def test_config_snippet_refusals_stay_one_line_whatever_the_path_holds(tmp_path):
    gone = tmp_path / "no\nsuch \x1b[31mhome"
    result = CliRunner().invoke(app, ["config-snippet", "--home", str(gone)])
    assert result.exit_code == 2
    [line] = result.output.splitlines()
    assert "\x1b" not in line and "no\\x0asuch \\x1b[31mhome is not a folder" in line
    raw = os.fsencode(tmp_path) + b"/not-utf8-\xff"
    os.mkdir(raw)
    result = CliRunner().invoke(app, ["config-snippet", "--home", os.fsdecode(raw)])
    assert result.exit_code == 2
    [line] = result.output.splitlines()
    assert "is not UTF-8" in line, line


def test_a_client_closing_stdout_ends_the_server_with_one_line_not_a_traceback(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_mcp", "--home", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdout.close()  # the client's end: every answer now meets a broken pipe
        for ident in range(3):
            ping = {"jsonrpc": "2.0", "id": ident, "method": "ping"}
            process.stdin.write((json.dumps(ping) + "\n").encode())
            process.stdin.flush()
        process.stdin.close()
        err = process.stderr.read().decode()  # type: ignore[union-attr]
        code = process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert "the client closed stdout" in err
    assert code == 0
