"""config-snippet writes --command as an absolute path, since a client starts the server from a
folder of its own choosing; a command that is not an executable file there is refused with one
line and exit 2, rather than registered as a server that can never start."""

import json
import os
import stat

from typer.testing import CliRunner

from memory_mcp.cli import app


def _program(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def _command(result) -> str:
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["mcpServers"]["boxmaker-memory"]["command"]


def test_a_relative_command_is_written_from_the_current_folder(tmp_path, monkeypatch):
    program = _program(tmp_path / "venv/bin/memory-mcp")
    monkeypatch.chdir(tmp_path / "venv")
    for given in ("./bin/memory-mcp", "bin/memory-mcp", "../venv/bin/./memory-mcp"):
        result = CliRunner().invoke(
            app, ["config-snippet", "--home", str(tmp_path), "--command", given]
        )
        assert _command(result) == str(program), given


def test_a_bare_name_is_written_as_the_program_path_finds(tmp_path, monkeypatch):
    program = _program(tmp_path / "bin/my-memory-mcp")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app, ["config-snippet", "--home", str(tmp_path), "--command", "my-memory-mcp"]
    )
    assert _command(result) == str(program)


def test_a_command_that_cannot_start_is_refused_with_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").write_text("not a program")
    (tmp_path / "plain").chmod(stat.S_IRUSR | stat.S_IWUSR)
    (tmp_path / "folder").mkdir()
    for given in ("./missing", "no-such-program-anywhere", "", "plain", "./folder"):
        result = CliRunner().invoke(
            app, ["config-snippet", "--home", str(tmp_path), "--command", given]
        )
        assert result.exit_code == 2, (given, result.output)
        [line] = result.output.splitlines()
        assert line.startswith("memory-mcp: --command") and "nothing to register" in line, line


def test_without_command_the_one_not_found_is_refused_not_written_bare(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.executable", str(tmp_path / "python"))  # nothing beside it
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = CliRunner().invoke(app, ["config-snippet", "--home", str(tmp_path)])
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith("memory-mcp: memory-mcp is not beside this Python nor on PATH"), line
    _program(tmp_path / "bin/memory-mcp")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = CliRunner().invoke(app, ["config-snippet", "--home", str(tmp_path)])
    assert _command(result) == str(tmp_path / "bin/memory-mcp")
