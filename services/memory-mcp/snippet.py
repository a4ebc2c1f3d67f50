"""The JSON that registers memory-mcp in an MCP client's configuration ("mcpServers").

Most clients (desktop chat clients, coding assistants) read this shape: a command, its arguments,
and an environment. The home and the command are written as absolute paths, since a client starts
the server from a folder of its own choosing. scripts/stack prints it with `memory-mcp
config-snippet --home PATH`.
"""

import json
import shutil
import sys
from pathlib import Path

SERVER_NAME = {"untrusted": "boxmaker-memory", "trusted": "boxmaker-memory-trusted"}


def default_command() -> str:
    """This installation's memory-mcp, as an absolute path when it can be found."""
    beside = Path(sys.executable).parent / "memory-mcp"
    if beside.is_file():
        return str(beside.absolute())
    return shutil.which("memory-mcp") or "memory-mcp"


def registration(command: str, home: Path, trust: str, klass: str) -> dict:
    args = ["--home", str(home.absolute()), "--trust", trust, "--class", klass]
    return {"mcpServers": {SERVER_NAME[trust]: {"command": command, "args": args}}}


def snippet(command: str, home: Path, trust: str, klass: str) -> str:
    return json.dumps(registration(command, home, trust, klass), indent=2, ensure_ascii=False)
