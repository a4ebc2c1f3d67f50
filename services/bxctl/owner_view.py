"""bxctl memory show, block, search, stats, promote, edit: the owner's view.

Each sends memory_admin with a JSON arg and prints memoryd's answer escaped (or, with --json, its
JSON document). edit runs $EDITOR on a private copy and sends the whole text back with the base
it was made from; a refused copy is kept for the owner to fix.
"""

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from bxctl import editcopy, usage
from bxctl.common import (
    EXIT_REFUSED,
    Json,
    MemorySocket,
    admin,
    admin_arg,
    answer_object,
    arg_too_long,
    ask_or_raise,
    fail,
    print_json_text,
    safe_json,
    show,
    show_diff,
)
from proto.client import RemoteError
from proto.escape import escape
from proto.files import read_file
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


check_file = usage.choice("memory", "user")


@app.command("show")
def show_edit(
    edit_id: Annotated[str, typer.Argument(metavar="ID", callback=usage.edit_id)],
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
    query: Annotated[str, typer.Argument(callback=usage.query, help="What to look for.")],
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
    for_a_program: Annotated[
        bool,
        typer.Option(
            "--for-a-program",
            help="Read by a program, not shown to you: the refs it prints do not become what "
            "memory.md:N and note:N name for forget and promote.",
        ),
    ] = False,
    memory_socket: MemorySocket = None,
) -> None:
    """How often recall returned each entry and moved note; those never recalled; sizes."""
    arg: dict = {"days": days}
    if for_a_program:
        arg["shown"] = False
    run(memory_socket, "stats", arg, as_json)


@app.command()
def promote(
    ref: Annotated[
        str,
        typer.Argument(
            metavar="REF", callback=usage.promote_ref, help="note:N (as search prints) or text."
        ),
    ],
    file: Annotated[str, typer.Option("--file", callback=check_file, help="memory or user.")],
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Move a note into memory.md or user.md, checked and journalled as the owner's edit."""
    run(memory_socket, "promote", {"ref": ref, "file": file}, as_json)


def editor_command() -> list[str]:
    """$VISUAL, else $EDITOR, else vi, as a command line; exits with one line when it cannot be
    read as one (an unbalanced quote, nothing but spaces)."""
    name = "VISUAL" if os.environ.get("VISUAL") else "EDITOR"
    value = os.environ.get(name) or "vi"
    try:
        command = shlex.split(value)
    except ValueError as e:
        fail(f"${name} cannot be read as a command ({e}); nothing was changed", EXIT_REFUSED)
    if not command:
        fail(f"${name} names no command; nothing was changed", EXIT_REFUSED)
    return command


def _editor(command: list[str], path: Path, written: str) -> None:
    """Run the editor on path; when it cannot be run, nothing was edited, so the copy of the
    owner's file and its folder are removed rather than left in $TMPDIR. An editor that exits
    with an error (vim's :cq) sends nothing: the copy is kept only when it was changed, since
    then it holds the owner's work; an unchanged one is removed too."""
    # Ctrl-C in the terminal reaches the editor too, which decides what it means (vim cancels a
    # command with it): bxctl, waiting, lets it pass, as git does. A handler, not SIG_IGN, so the
    # editor does not inherit an ignored Ctrl-C. SIGTERM and SIGHUP still stop bxctl.
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        status = subprocess.call([*command, str(path)])
    except OSError as e:
        shutil.rmtree(path.parent, ignore_errors=True)
        fail(
            f"cannot run the editor {escape(command[0])}: {e.strerror}; nothing was changed",
            EXIT_REFUSED,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    if status != 0:
        try:
            unchanged = read_file(path) == written.encode("utf-8")
        except OSError:
            unchanged = False
        if unchanged:
            shutil.rmtree(path.parent, ignore_errors=True)
            fail(f"the editor exited with status {status}; nothing was sent or changed", 1)
        fail(f"the editor exited with status {status}; nothing was sent (copy: {path})", 1)


def _kept(copy: Path, message: str, as_json: bool) -> NoReturn:
    """The edit was not applied: say why, and where the owner's copy is kept."""
    if as_json:
        print(safe_json({"ok": False, "message": message, "copy": str(copy)}))
    else:
        print(f"bxctl: {escape(message)}", file=sys.stderr)
        print(f"bxctl: your copy is kept at {escape(str(copy), markup=False)}", file=sys.stderr)
    raise typer.Exit(EXIT_REFUSED)


def _unread(copy: Path, file: str, error: OSError | UnicodeDecodeError) -> NoReturn:
    """Say why the edited copy could not be read: gone (the editor's own delete, a cleaner of
    temporary files), or there but not readable, kept for the owner."""
    shown = escape(str(copy), markup=False)
    if isinstance(error, FileNotFoundError):
        with contextlib.suppress(OSError):  # only while empty: never what someone else put there
            os.rmdir(copy.parent)
        fail(
            f"the copy {shown} is gone (removed while the editor ran); nothing was changed:"
            f" run bxctl memory edit {file} again",
            1,
        )
    why = (
        "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else error.strerror or str(error)
    )
    fail(f"cannot read the copy {shown}: {why}; it is kept", 1)


@app.command()
def edit(
    file: Annotated[str, typer.Argument(callback=check_file, help="memory or user.")],
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Edit memory.md or user.md in $EDITOR; checked whole on save, applied as one edit."""
    command = editor_command()
    editcopy.name_left()
    answer = admin(memory_socket, "file", {"file": file, "json": True})
    current = answer_object(answer, text=str, base=str)
    folder = editcopy.make_folder(current["text"])  # 0700
    copy = folder / f"{file}.md"  # named here: the answer's own name is not a path to trust
    try:
        try:
            editcopy.write_copy(copy, current["text"])
        except OSError as e:  # a full $TMPDIR: no part of the copy is left behind
            editcopy.remove(folder)
            fail(f"cannot make the copy to edit in {folder}: {e.strerror}; nothing was changed", 1)
        _editor(command, copy, current["text"])
        try:
            # Never through a link nor waiting on a FIFO the editor left in the copy's place:
            # what is read here goes into every prompt (a link to /etc/shadow, read as root,
            # would too).
            text = read_file(copy).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            _unread(copy, file, e)
        arg = admin_arg({"file": file, "text": text, "base": current["base"], "json": as_json})
    except KeyboardInterrupt:
        # SIGTERM, SIGHUP or Ctrl-C before the copy was sent (the editor is ended with it):
        # cli.py says the stop; this says what became of the copy
        editcopy.stopped(copy)
        raise
    too_long = arg_too_long("edit", arg)
    if too_long is not None:
        _kept(copy, too_long, as_json)
    try:
        reply = ask_or_raise(memory_socket, MemoryAdmin(command="edit", arg=arg), MemoryAdminReply)
    except RemoteError as e:
        _kept(copy, str(e), as_json)
    except (typer.Exit, KeyboardInterrupt):
        # memoryd not answering, a bad answer, an interrupt: said already (or by cli.py after),
        # but the owner's edited text is still only in the copy
        print(f"bxctl: your copy is kept at {escape(str(copy), markup=False)}", file=sys.stderr)
        raise
    editcopy.remove(copy.parent)
    if as_json:
        print_json_text(reply.text)
    else:
        show(reply.text)
