"""The JSON that registers memory-mcp in an MCP client's configuration ("mcpServers").

Most clients (desktop chat clients, coding assistants) read this shape: a command, its arguments,
and an environment. The home and the command are written as absolute paths, since a client starts
the server from a folder of its own choosing. scripts/stack prints it with `memory-mcp
config-snippet --home PATH`. A registration names a home that exists: without --home or
$BOXMAKER_HOME, or with a home that is not a folder, it refuses with one line rather than register
a server that could never find its memory.

The snippet is JSON with every character outside ASCII written as a \\u escape: it is valid JSON
whatever the path holds (a quote, a backslash, a newline, an escape sequence), the client's parser
reads back exactly the path, and nothing in it can act on the terminal it is printed to. A path
that is not UTF-8 cannot be written in JSON at all and is refused. A path in a refusal is escaped
(proto.escape.for_log), so the refusal stays one line.
"""

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from memory_mcp.errors import StartFailed
from proto.escape import for_log

SERVER_NAME = {"untrusted": "boxmaker-memory", "trusted": "boxmaker-memory-trusted"}


def default_command() -> str:
    """This installation's memory-mcp as an absolute path: the one beside this Python, else the
    one PATH finds; NoCommand when there is neither (a bare name would be looked up from the
    client's own PATH, perhaps another installation or none)."""
    beside = Path(sys.executable).parent / "memory-mcp"
    if beside.is_file():
        return str(beside.absolute())
    found = shutil.which("memory-mcp")
    if found is None:
        raise NoCommand(
            "memory-mcp is not beside this Python nor on PATH: pass --command PATH; nothing to "
            "register"
        )
    return chosen_command(found)


class NoHome(StartFailed):
    """No home to register: none was given, or the one given is not a folder."""


class NoCommand(StartFailed):
    """No command to register: the one given is not a program that can be found from anywhere."""


def chosen_command(command: str) -> str:
    """--command as an absolute path: a path resolved against the current folder, a bare name
    (no /) as the program PATH finds; NoCommand when that is not an executable file, or cannot be
    written in JSON (not UTF-8)."""
    shown = for_log(command, limit=4096)
    if not command:
        raise NoCommand("--command is empty; nothing to register")
    located = command if "/" in command else shutil.which(command)
    if located is None:
        raise NoCommand(
            f"--command {shown} is not a program on PATH; pass its path (a client starts the "
            "server from a folder of its own choosing); nothing to register"
        )
    found = os.path.abspath(located)
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise NoCommand(
            f"--command {for_log(found, limit=4096)} is not an executable file; nothing to register"
        )
    try:
        found.encode("utf-8")
    except UnicodeError:
        raise NoCommand(
            f"--command {shown} is not UTF-8, which a client's JSON configuration cannot name; "
            "nothing to register"
        ) from None
    return found


def snippet_home(home: Path | None, environ: Mapping[str, str]) -> Path:
    """The home to register: --home, else $BOXMAKER_HOME; NoHome when neither names a folder."""
    source = "--home"
    if home is None:
        if not environ.get("BOXMAKER_HOME"):
            raise NoHome(
                "no home to register: pass --home PATH (scripts/stack up prints the command "
                "with the stack's home) or set BOXMAKER_HOME"
            )
        home, source = Path(environ["BOXMAKER_HOME"]), "BOXMAKER_HOME"
    shown = for_log(home.absolute(), limit=4096)
    if not home.is_dir():
        raise NoHome(f"{source} {shown} is not a folder; nothing to register")
    try:
        str(home.absolute()).encode("utf-8")
    except UnicodeError:
        raise NoHome(
            f"{source} {shown} is not UTF-8, which a client's JSON configuration cannot name; "
            "nothing to register"
        ) from None
    return home


def registration(
    command: str, home: Path, trust: str, klass: str, max_class: str = "private"
) -> dict:
    args = ["--home", str(home.absolute()), "--trust", trust, "--class", klass]
    if max_class != "private":  # memoryd's default, which memory-mcp takes without it
        args += ["--max-class", max_class]
    return {"mcpServers": {SERVER_NAME[trust]: {"command": command, "args": args}}}


def snippet(command: str, home: Path, trust: str, klass: str, max_class: str = "private") -> str:
    found = registration(command, home, trust, klass, max_class)
    return json.dumps(found, indent=2, ensure_ascii=True)
