"""bxctl memory backup, restore, export, import, forget: the owner's data.

memoryd writes archives and exports into {home}/backups/ (it runs in a container that sees only
its own folders, and one reply holds at most 1 MiB), and answers with the path. bxctl prints it,
and with --out copies the file where the owner asked. An archive or import file the owner names
elsewhere is copied into backups/ for memoryd to read, and removed after; so is one in backups/
whose name memoryd would not take (a space, a letter outside ASCII) or, when bxctl runs as root,
that memoryd's user does not own (handover.py).

The home is $BOXMAKER_HOME; with the socket given alone (--memory-socket, or
$BOXMAKER_MEMORY_SOCKET), the home it lies in when it is at its usual place there. A socket at its
usual place in another home than $BOXMAKER_HOME is refused before memoryd is asked.
"""

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from bxctl import reach, sessionrestore, usage
from bxctl.common import (
    EXIT_REFUSED,
    Json,
    MemorySocket,
    admin_message,
    answer_object,
    ask_or_raise,
    default_socket,
    escape_ids,
    fail,
    print_json_text,
    refuse_other_home,
    socket_home,
)
from bxctl.handover import check_dest, copy_new, handed_over
from bxctl.reach import note_copy
from proto.client import RemoteError
from proto.config import default_home, host_paths
from proto.errors import ProtoError, Unreachable
from proto.escape import escape
from proto.messages import MemoryAdminReply

app = typer.Typer()
LONG_TIMEOUT = 3600.0
Out = Annotated[
    Path | None, typer.Option("--out", help="Also copy the file here (must not exist).")
]


def _ask(
    memory_socket, command: str, arg: dict, shown: tuple[str, str] | None = None, **fields: type
) -> dict:
    """memoryd's answer to command, an object with a message and the fields named; shown (the
    name of a copy handed over, the path the owner gave) puts the owner's path back in what
    memoryd says, its refusals too, where memoryd could only name the copy."""
    message = admin_message(command, arg)
    try:
        reply = ask_or_raise(memory_socket, message, MemoryAdminReply, timeout=LONG_TIMEOUT)
    except RemoteError as e:
        text = str(e) if shown is None else str(e).replace(*shown)
        fail(escape_ids(host_paths(text, default_home())), EXIT_REFUSED)
    answer = answer_object(reply.text, message=str, **fields)
    if shown is not None:
        answer = {k: v.replace(*shown) if isinstance(v, str) else v for k, v in answer.items()}
    return answer


def home_for(memory_socket: Path | None) -> Path:
    """The home whose backups/ memoryd reads: $BOXMAKER_HOME, else the one the socket given lies
    in at its usual place, else the default. A socket of another home than $BOXMAKER_HOME is
    refused (common.refuse_other_home) before memoryd is asked."""
    refuse_other_home(memory_socket)
    if memory_socket is None or os.environ.get("BOXMAKER_HOME"):
        return default_home()
    return socket_home(memory_socket) or default_home()


def _where(path: str, home: Path) -> Path:
    """A file memoryd wrote in backups/, as this side sees it; a path anywhere else is a bad
    answer (the socket may be anyone's, and bxctl reads and copies what it names)."""
    where = Path(host_paths(path, home))
    inside = os.path.realpath(where.parent) == os.path.realpath(home / "backups")
    if not inside or where.name in ("", ".", ".."):
        fail(
            f"bad answer from memoryd: a file outside {escape(str(home), markup=False)}/backups/ "
            "(is the socket the memoryd of another home? set BOXMAKER_HOME to its home)",
            EXIT_REFUSED,
        )
    return where


def _say(reply: dict, as_json: bool, home: Path) -> None:
    if as_json:
        print_json_text(json.dumps(reply))
    else:
        # paths and sentences as they are (an escaped path could not be pasted), made inert
        print(escape(host_paths(reply["message"], home), markup=False))


def _read_export(path: Path) -> str:
    """The export memoryd wrote, as text; one line when it is gone (a later export removes the
    one before) or cannot be read."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        fail(
            f"the export {escape(str(path), markup=False)} was removed before it could be read "
            "(another export ran at once?); run it again",
            EXIT_REFUSED,
        )
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read the export {escape(str(path), markup=False)}: {e}", EXIT_REFUSED)


def _ask_about(memory_socket, command: str, path: Path, arg: dict, **fields: type) -> dict:
    """The command asked of memoryd about a file the owner names (handed over in backups/), the
    copy made for it removed whatever the answer (handover.handed_over)."""
    with handed_over(path, home_for(memory_socket), memory_socket, command) as (name, copy):
        shown = None if copy is None else (name, str(path))
        return _ask(memory_socket, command, {"name": name, **arg}, shown, **fields)


def _copy_out(reply: dict, dest: Path, home: Path, what: str) -> None:
    """The file memoryd wrote in backups/ copied where the owner asked, and the reply says so;
    a failed copy says where the file memoryd made is (memoryd was asked to remove nothing
    older: that waits for the copy, _prune)."""
    made = _where(reply["path"], home)
    note_copy(what, made, dest)  # an interrupt from here on says the copy once it stands
    copy_new(made, dest, f" there; the {what} is in {made}, and no older {what} was removed")
    reply["copy"] = str(dest)
    reply["message"] += f"; copied to {dest}"


def _prune(memory_socket, command: str, arg: dict, reply: dict) -> None:
    """Once the copy is made, memoryd's removal of the older archives or exports, said in the
    reply; a refusal, or memoryd gone meanwhile, is said there too, as the file and its copy
    stand (the older ones wait for the next prune)."""
    arg = {**arg, "prune_only": True, "made": Path(reply["path"]).name}
    message = admin_message(command, arg)
    path = memory_socket or default_socket()
    try:
        answer = reach.exchange(path, message, MemoryAdminReply, LONG_TIMEOUT)
    except (RemoteError, Unreachable) as e:  # refused, or never reached
        reply["message"] += f"; the older ones were not removed ({e})"
        return
    except ProtoError as e:  # sent, and not answered: some may have been removed
        reply["message"] += (
            f"; memoryd did not say whether it removed the older ones ({e}): ls "
            "$BOXMAKER_HOME/backups/ shows which are left"
        )
        return
    pruned = answer_object(answer.text, message=str, removed=list)
    reply["removed"] = pruned["removed"]
    reply["message"] += f"; {pruned['message']}"


@app.command()
def backup(
    path: Annotated[Path | None, typer.Argument(help="Also copy the archive here.")] = None,
    with_sessions: Annotated[
        bool, typer.Option("--with-sessions", help="Also the session logs recall reads.")
    ] = False,
    keep: Annotated[
        int | None, typer.Option("--keep", min=1, max=1000, help="Keep only the newest N.")
    ] = None,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Write one archive of memory (files, journal, pending, recall logs) into {home}/backups/."""
    home = home_for(memory_socket)
    if path is not None:
        check_dest(path, "no backup was made")
    arg: dict = {"with_sessions": with_sessions}
    if keep is not None and path is None:
        arg["keep"] = keep
    reply = _ask(memory_socket, "backup", arg, path=str)
    if path is not None:
        _copy_out(reply, path, home, "backup")
        if keep is not None:
            _prune(memory_socket, "backup", {"keep": keep}, reply)
    _say(reply, as_json, home)


@app.command()
def restore(
    archive: Annotated[Path, typer.Argument(help="A backup archive (.tar.gz).")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Back up the memory there, then replace it.")
    ] = False,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Check a backup whole, then lay it into an empty home (or, with --replace, any home)."""
    reply = _ask_about(memory_socket, "restore", archive, {"replace": replace})
    home = home_for(memory_socket)
    # memoryd never writes sessions/ (loopd's): bxctl lays the archive's session logs itself.
    refused = sessionrestore.after_restore(reply, archive, home, memory_socket)
    _say(reply, as_json, home)
    if not as_json:
        for line in refused:
            print(escape(line, markup=False))


@app.command("export")
def export_memory(
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            callback=usage.choice("jsonl", "markdown"),
            help="jsonl (for import) or markdown (for reading).",
        ),
    ] = "jsonl",
    out: Out = None,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Export every entry and note with its provenance (docs/export-format.md)."""
    home = home_for(memory_socket)
    if out is not None:
        check_dest(out, "nothing was exported")
    arg: dict = {"format": fmt} if out is None else {"format": fmt, "remove_older": False}
    reply = _ask(memory_socket, "export", arg, path=str)
    if out is not None:
        _copy_out(reply, out, home, "export")
        _prune(memory_socket, "export", {}, reply)
        _say(reply, as_json, home)
    elif as_json:
        _say(reply, True, home)
    else:
        # jsonl is ASCII (every other character \u-escaped); markdown is printed escaped.
        data = _read_export(_where(reply["path"], home))
        print(data if fmt == "jsonl" else escape(data, markup=False), end="")
        _say_stopped(reply, home)


def _say_stopped(reply: dict, home: Path) -> None:
    """On stderr, as stdout is the export: a forget that stopped part way, whose text the
    export left out, and the command that finishes it."""
    stopped = reply.get("forget_stopped")
    if isinstance(stopped, str):
        print(escape(host_paths(stopped, home), markup=False), file=sys.stderr)


@app.command("import")
def import_memory(
    file: Annotated[Path, typer.Argument(help="An export in jsonl.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would change; write nothing.")
    ] = False,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Bring an export's entries and notes in as the owner's journalled edits."""
    reply = _ask_about(memory_socket, "import", file, {"dry_run": dry_run}, lines=list)
    home = home_for(memory_socket)
    if as_json:
        _say(reply, True, home)
        return
    for line in reply["lines"]:
        print(escape(line, markup=False))
    _say(reply, False, home)


@app.command()
def forget(
    ref: Annotated[
        str,
        typer.Argument(
            metavar="ID",
            callback=usage.forget_ref,
            # <ID>, not a bare ID: the help's renderer would print ":ID:" as an emoji.
            help="note:N or session:<ID>:N as search prints them (counted from 0), or memory.md:N"
            " or user.md:N as stats or block prints them (counted from 1: memory.md:1 is the first"
            " entry).",
        ),
    ],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask first.")] = False,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Forget a note, an entry or a session record everywhere memoryd holds it. Cannot be undone."""
    home = home_for(memory_socket)
    arg: dict = {"id": ref}
    if not yes and sys.stdin is None:  # started with fd 0 closed: the question has no answer
        fail(
            "not forgotten: the standard input is closed, so forget cannot ask; pass --yes to "
            "forget without asking; nothing was changed",
            EXIT_REFUSED,
        )
    if not yes:
        dry = {"id": ref, "dry_run": True}
        shown = _ask(memory_socket, "forget", dry, texts=list, check=str)
        for text in shown["texts"]:
            print("    " + escape(text, markup=False).replace("\n", "\n    "), file=sys.stderr)
        print(escape(host_paths(shown["message"], home), markup=False), file=sys.stderr)
        arg["check"] = shown["check"]
        try:
            agreed = typer.confirm("Forget it?", default=False, err=True)
        except (typer.Abort, OSError, RuntimeError):  # no answer: end of input, unreadable
            print(file=sys.stderr)  # the question's line ends before the refusal's
            agreed = False
        if not agreed:
            fail("not forgotten: nothing was changed", EXIT_REFUSED)
    reply = _ask(memory_socket, "forget", arg)
    _say(reply, as_json, home)
