"""The way back bxctl prints when a backup finds a memory file missing is a command that works
pasted as printed: bxctl shows refusals with markup made inert (a ">" as "\\>"), so a command
with a redirection or a pipe would not. Pasted in the home folder (ARCHIVE replaced), it puts
back that one file as the backup holds it and touches nothing else."""

import json
import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from proto.client import request
from proto.messages import MemoryCall, ToolRequest
from tests.memoryd_process import MemorydProcess

runner = CliRunner()
COMMAND = re.compile(r"a backup holds it: (.*?), run in the home folder")


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    yield proc
    proc.stop()


def _add(memoryd, file: str, text: str) -> None:
    req = ToolRequest(
        session="s-clean",
        call_id=f"add-{file}",
        tool="memory",
        arguments=json.dumps({"action": "add", "file": file, "text": text}),
    )
    call = MemoryCall(request=req, taint="private", untrusted=False)
    assert request(memoryd.broker_socket, call).ok


def _bx(memoryd, *argv):
    return runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})


def _files(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ["user.md", "memory.md"])
def test_the_command_printed_puts_the_missing_file_back(memoryd, tmp_path, name):
    _add(memoryd, "user", "Prefers answers in UTC.")
    _add(memoryd, "memory", "The launch moved to Thursday.")
    made = _bx(memoryd, "memory", "backup", "--json")
    assert made.exit_code == 0, made.stderr
    [archive] = (memoryd.home / "backups").glob("memory-*.tar.gz")
    memory = memoryd.home / "memory"
    held = _files(memory)
    shutil.move(memory / name, tmp_path / name)

    refused = _bx(memoryd, "memory", "backup")
    assert refused.exit_code == 1, refused.stderr
    found = COMMAND.search(refused.stderr)
    assert found, refused.stderr
    pasted = found.group(1).replace("ARCHIVE", str(archive))
    ran = subprocess.run(
        ["bash", "-c", pasted], cwd=memoryd.home, capture_output=True, text=True, timeout=30
    )
    assert ran.returncode == 0, (pasted, ran.stderr)
    assert _files(memory) == held
