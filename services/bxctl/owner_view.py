"""bxctl memory show, block, search, stats, promote, edit: the owner's view.

Each sends memory_admin with a JSON arg and prints memoryd's answer escaped (or, with --json, its
JSON document). edit runs $EDITOR on a private copy and sends the whole text back with the base
it was made from; a refused copy is kept for the owner to fix.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from bxctl.common import (
    EXIT_REFUSED,
    Json,
    MemorySocket,
    admin,
    ask_or_raise,
    fail,
    print_json_text,
    safe_json,
    show,
    show_diff,
)
from proto.client import RemoteError
from proto.escape import escape
from proto.messages import MemoryAdmin, MemoryAdminReply

app = typer.Typer()


def run(memory_socket, command: str, arg: dict, as_json: bool, printer=show) -> None:
    if as_json:
        arg = {**arg, "json": True}
    text = admin(memory_socket, command, arg)
    if as_json:
        print_json_text(text)
    else:
        printer(text)


def check_file(value: str) -> str:
    if value not in ("memory", "user"):
        raise typer.BadParameter("memory or user")
    return value


@app.command("show")
def show_edit(
    edit_id: Annotated[str, typer.Argument(metavar="ID")],
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Show one edit whole: time, session, action, file, and its entries as a diff."""
    run(memory_socket, "show", {"id": edit_id}, as_json, show_diff)


@app.command()
def block(as_json: Json = False, memory_socket: MemorySocket = None) -> None:
    """Print the memory block as the next session gets it, what it leaves out, and file sizes."""
    run(memory_socket, "block", {}, as_json)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", min=1, max=10, help="How many hits.")] = 5,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Search memory as recall does (same tags and labels); not counted as the agent's recall."""
    run(memory_socket, "search", {"query": query, "k": k}, as_json)


@app.command()
def stats(
    days: Annotated[int, typer.Option(min=1, max=366, help="How many days of recalls.")] = 30,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """How often recall returned each entry and moved note; those never recalled; sizes."""
    run(memory_socket, "stats", {"days": days}, as_json)


@app.command()
def promote(
    ref: Annotated[str, typer.Argument(metavar="REF", help="note:N (as search prints) or text.")],
    file: Annotated[str, typer.Option("--file", callback=check_file, help="memory or user.")],
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Move a note into memory.md or user.md, checked and journalled as the owner's edit."""
    run(memory_socket, "promote", {"ref": ref, "file": file}, as_json)


def _editor(path: Path) -> None:
    command = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    try:
        status = subprocess.call([*command, str(path)])
    except OSError as e:
        fail(f"cannot run the editor {escape(command[0])}: {e.strerror}", EXIT_REFUSED)
    if status != 0:
        fail(f"the editor exited with status {status}; nothing was sent (copy: {path})", 1)


@app.command()
def edit(
    file: Annotated[str, typer.Argument(callback=check_file, help="memory or user.")],
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Edit memory.md or user.md in $EDITOR; checked whole on save, applied as one edit."""
    current = json.loads(admin(memory_socket, "file", {"file": file, "json": True}))
    folder = Path(tempfile.mkdtemp(prefix="bxctl-edit-"))  # 0700
    copy = folder / current["file"]
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(current["text"])
    _editor(copy)
    try:
        text = copy.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read the copy {escape(str(copy), markup=False)}: {e}; it is kept", 1)
    arg = {"file": file, "text": text, "base": current["base"], "json": as_json}
    try:
        reply = ask_or_raise(
            memory_socket,
            MemoryAdmin(command="edit", arg=json.dumps(arg, ensure_ascii=False)),
            MemoryAdminReply,
        )
    except RemoteError as e:
        if as_json:
            print(safe_json({"ok": False, "message": str(e), "copy": str(copy)}))
        else:
            print(f"bxctl: {escape(str(e))}", file=sys.stderr)
            print(f"bxctl: your copy is kept at {escape(str(copy), markup=False)}", file=sys.stderr)
        raise typer.Exit(EXIT_REFUSED) from None
    copy.unlink()
    folder.rmdir()
    if as_json:
        print_json_text(reply.text)
    else:
        show(reply.text)
