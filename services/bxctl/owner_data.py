"""bxctl memory backup, restore, export, import, forget: the owner's data.

memoryd writes archives and exports into {home}/backups/ (it runs in a container that sees only
its own folders, and one reply holds at most 1 MiB), and answers with the path. bxctl prints it,
and with --out copies the file where the owner asked: to a temporary file beside it, fsync'd,
then linked to the name (never over an existing file). An archive or import file the owner names
elsewhere is copied into backups/ the same way for memoryd to read, and removed after; so is one
in backups/ whose name memoryd would not take (a space, a letter outside ASCII).

The home is $BOXMAKER_HOME; with the socket given alone (--memory-socket, or
$BOXMAKER_MEMORY_SOCKET), the home it lies in when it is at its usual place there.
"""

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from bxctl import sessionlay
from bxctl.common import (
    EXIT_REFUSED,
    Json,
    MemorySocket,
    admin_message,
    answer_object,
    ask_or_raise,
    escape_ids,
    fail,
    print_json_text,
)
from proto.client import RemoteError
from proto.config import default_home, host_paths
from proto.escape import escape
from proto.messages import MemoryAdminReply
from proto.paths import OWNER_ADMIN_SOCKET

app = typer.Typer()
LONG_TIMEOUT = 3600.0
Out = Annotated[
    Path | None, typer.Option("--out", help="Also copy the file here (must not exist).")
]


# The names memoryd reads a file in backups/ by (as its own check says them).
NAME = re.compile(r"\.?[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


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
    in at its usual place ({home}/run/owner-memory/admin.sock), else the default."""
    if memory_socket is not None and not os.environ.get("BOXMAKER_HOME"):
        parts = Path(os.path.abspath(memory_socket)).parts
        tail = OWNER_ADMIN_SOCKET.parts
        if parts[-len(tail) :] == tail:
            return Path(*parts[: -len(tail)])
    return default_home()


def _where(path: str, home: Path) -> Path:
    """A file memoryd wrote in backups/, as this side sees it; a path anywhere else is a bad
    answer (the socket may be anyone's, and bxctl reads and copies what it names)."""
    where = Path(host_paths(path, home))
    inside = os.path.realpath(where.parent) == os.path.realpath(home / "backups")
    if not inside or where.name in ("", ".", ".."):
        fail("bad answer from memoryd: a file outside its backups/ folder", EXIT_REFUSED)
    return where


def _say(reply: dict, as_json: bool, home: Path) -> None:
    if as_json:
        print_json_text(json.dumps(reply))
    else:
        # paths and sentences as they are (an escaped path could not be pasted), made inert
        print(escape(host_paths(reply["message"], home), markup=False))


def _check_dest(dest: Path, nothing: str) -> None:
    """Refuse before memoryd is asked when dest cannot be written (it exists, or its folder is
    missing or not writable): memoryd's backup prunes older archives and its export removes the
    older exports, which a failed copy afterwards could not give back."""
    shown = escape(str(dest), markup=False)
    if os.path.lexists(dest):
        fail(f"{shown} exists; {nothing}", EXIT_REFUSED)
    if not dest.parent.is_dir():
        folder = escape(str(dest.parent), markup=False)
        fail(f"cannot write {shown}: {folder} is not a folder; {nothing}", EXIT_REFUSED)
    if not os.access(dest.parent, os.W_OK | os.X_OK):
        fail(f"cannot write {shown}: its folder is not writable; {nothing}", EXIT_REFUSED)


def copy_new(source: Path, dest: Path, owner: tuple[int, int] | None = None) -> None:
    """Copy source to dest, 0600 (owned by owner, uid and gid, when given), atomically, never over
    an existing file; one line on failure."""
    if os.path.lexists(dest):
        fail(f"{escape(str(dest), markup=False)} exists; nothing was written", EXIT_REFUSED)
    tmp = dest.with_name(f".{dest.name}.{os.urandom(4).hex()}.tmp")
    try:
        with open(source, "rb") as src:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            if owner is not None:
                os.fchown(fd, *owner)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
                out.flush()
                os.fsync(out.fileno())
        os.link(tmp, dest)
        folder = os.open(dest.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except FileExistsError:
        fail(f"{escape(str(dest), markup=False)} exists; nothing was written", EXIT_REFUSED)
    except OSError as e:
        fail(
            f"cannot write {escape(str(dest), markup=False)}: {e.strerror or e}; nothing was left",
            EXIT_REFUSED,
        )
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


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


def _hand_over(path: Path, home: Path, memory_socket) -> tuple[str, Path | None]:
    """The name memoryd reads path by in backups/, and the copy made for it (removed after)."""
    try:
        if not path.is_file():
            fail(f"{escape(str(path), markup=False)} is not a file", EXIT_REFUSED)
    except OSError as e:
        fail(f"cannot read {escape(str(path), markup=False)}: {e.strerror}", EXIT_REFUSED)
    folder = home / "backups"
    owner = _reader_of(folder)
    inside = path.resolve().parent == folder.resolve() and not path.is_symlink()
    if inside and NAME.fullmatch(path.name) and (owner is None or _owned_by(path, owner)):
        return path.name, None
    copy = folder / f".incoming-{os.urandom(6).hex()}{''.join(path.suffixes)[-16:]}"
    copy = copy.with_name("".join(c for c in copy.name if c.isalnum() or c in "._-"))
    if not folder.is_dir():
        if memory_socket is not None and not os.environ.get("BOXMAKER_HOME"):
            fail(
                "the file is handed to memoryd through its home's backups/ folder, and the "
                "socket alone does not say where that is: set BOXMAKER_HOME to memoryd's home "
                "(scripts/stack status names it)",
                EXIT_REFUSED,
            )
        fail(f"{escape(str(folder), markup=False)} is missing; is memoryd set up?", EXIT_REFUSED)
    copy_new(path, copy, owner)
    return copy.name, copy


def _reader_of(folder: Path) -> tuple[int, int] | None:
    """Who memoryd runs as, when bxctl runs as root and memoryd as another user (rootful
    containers run it as 10001; rootless ones as the user podman maps it to): the owner of the
    home's backups/ folder, which memoryd made. A file handed over there must be that user's, as
    a 0600 file of root's is one memoryd cannot open. None when no handing over of owners is
    needed or possible (bxctl is not root: the files it makes are its own user's, as memoryd's)."""
    if os.geteuid() != 0:
        return None
    try:
        st = folder.stat()
    except OSError:
        return None  # the missing folder is said below
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def _owned_by(path: Path, owner: tuple[int, int]) -> bool:
    try:
        return path.stat().st_uid == owner[0]
    except OSError:
        return False


def _ask_about(memory_socket, command: str, path: Path, arg: dict, **fields: type) -> dict:
    """The command asked of memoryd about a file the owner names (handed over in backups/), the
    copy made for it removed whatever the answer."""
    name, copy = _hand_over(path, home_for(memory_socket), memory_socket)
    shown = None if copy is None else (name, str(path))
    try:
        return _ask(memory_socket, command, {"name": name, **arg}, shown, **fields)
    finally:
        if copy is not None:
            copy.unlink(missing_ok=True)


def _copy_out(reply: dict, dest: Path, home: Path) -> None:
    """The file memoryd wrote in backups/ copied where the owner asked, and the reply says so."""
    copy_new(_where(reply["path"], home), dest)
    reply["copy"] = str(dest)
    reply["message"] += f"; copied to {dest}"


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
    if path is not None:
        _check_dest(path, "no backup was made")
    arg: dict = {"with_sessions": with_sessions}
    if keep is not None:
        arg["keep"] = keep
    home = home_for(memory_socket)
    reply = _ask(memory_socket, "backup", arg, path=str)
    if path is not None:
        _copy_out(reply, path, home)
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
    refused = sessionlay.after_restore(reply, archive, home, memory_socket)
    _say(reply, as_json, home)
    if not as_json:
        for line in refused:
            print(escape(line, markup=False))


@app.command("export")
def export_memory(
    fmt: Annotated[
        str, typer.Option("--format", help="jsonl (for import) or markdown (for reading).")
    ] = "jsonl",
    out: Out = None,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Export every entry and note with its provenance (docs/export-format.md)."""
    if fmt not in ("jsonl", "markdown"):
        fail(f"--format is jsonl or markdown, not {escape(fmt)}", EXIT_REFUSED)
    if out is not None:
        _check_dest(out, "nothing was exported")
    home = home_for(memory_socket)
    reply = _ask(memory_socket, "export", {"format": fmt}, path=str)
    if out is not None:
        _copy_out(reply, out, home)
        _say(reply, as_json, home)
    elif as_json:
        _say(reply, True, home)
    else:
        # jsonl is ASCII (every other character \u-escaped); markdown is printed escaped.
        data = _read_export(_where(reply["path"], home))
        print(data if fmt == "jsonl" else escape(data, markup=False), end="")


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
        typer.Argument(metavar="ID", help="note:N, memory.md:N, user.md:N or session:ID:N."),
    ],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask first.")] = False,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Forget a note, an entry or a session record everywhere memoryd holds it. Cannot be undone."""
    home = home_for(memory_socket)
    arg: dict = {"id": ref}
    if not yes:
        dry = {"id": ref, "dry_run": True}
        shown = _ask(memory_socket, "forget", dry, texts=list, check=str)
        for text in shown["texts"]:
            print("    " + escape(text, markup=False).replace("\n", "\n    "), file=sys.stderr)
        print(escape(host_paths(shown["message"], home), markup=False), file=sys.stderr)
        arg["check"] = shown["check"]
        try:
            agreed = typer.confirm("Forget it?", default=False, err=True)
        except typer.Abort:  # no answer (end of input)
            agreed = False
        if not agreed:
            fail("not forgotten: nothing was changed", EXIT_REFUSED)
    reply = _ask(memory_socket, "forget", arg)
    _say(reply, as_json, home)
