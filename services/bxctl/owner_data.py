"""bxctl memory backup, restore, export, import, forget: the owner's data.

memoryd writes archives and exports into {home}/backups/ (it runs in a container that sees only
its own folders, and one reply holds at most 1 MiB), and answers with the path. bxctl prints it,
and with --out copies the file where the owner asked: to a temporary file beside it, fsync'd,
then linked to the name (never over an existing file). An archive or import file the owner names
elsewhere is copied into backups/ the same way for memoryd to read, and removed after.
"""

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from bxctl.common import EXIT_REFUSED, Json, MemorySocket, ask, fail, print_json_text, show
from proto.config import default_home, host_paths
from proto.escape import escape
from proto.messages import MemoryAdmin, MemoryAdminReply

app = typer.Typer()
LONG_TIMEOUT = 3600.0
Out = Annotated[
    Path | None, typer.Option("--out", help="Also copy the file here (must not exist).")
]


def _ask(memory_socket, command: str, arg: dict) -> dict:
    text = ask(
        memory_socket,
        MemoryAdmin(command=command, arg=json.dumps(arg, ensure_ascii=False)),
        MemoryAdminReply,
        timeout=LONG_TIMEOUT,
    ).text
    try:
        return json.loads(text)
    except ValueError:
        fail("bad answer from memoryd: not JSON", EXIT_REFUSED)


def _where(path: str) -> Path:
    """A path memoryd named, as this side sees it."""
    return Path(host_paths(path, default_home()))


def _say(reply: dict, as_json: bool) -> None:
    if as_json:
        print_json_text(json.dumps(reply))
    else:
        show(host_paths(reply["message"], default_home()))


def copy_new(source: Path, dest: Path) -> None:
    """Copy source to dest, 0600, atomically, never over an existing file; one line on failure."""
    if os.path.lexists(dest):
        fail(f"{escape(str(dest), markup=False)} exists; nothing was written", EXIT_REFUSED)
    tmp = dest.with_name(f".{dest.name}.{os.urandom(4).hex()}.tmp")
    try:
        with open(source, "rb") as src:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
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


def _hand_over(path: Path) -> tuple[str, Path | None]:
    """The name memoryd reads path by in backups/, and the copy made for it (removed after)."""
    try:
        if not path.is_file():
            fail(f"{escape(str(path), markup=False)} is not a file", EXIT_REFUSED)
    except OSError as e:
        fail(f"cannot read {escape(str(path), markup=False)}: {e.strerror}", EXIT_REFUSED)
    folder = default_home() / "backups"
    if path.resolve().parent == folder.resolve() and not path.is_symlink():
        return path.name, None
    copy = folder / f".incoming-{os.urandom(6).hex()}{''.join(path.suffixes)[-16:]}"
    copy = copy.with_name("".join(c for c in copy.name if c.isalnum() or c in "._-"))
    if not folder.is_dir():
        fail(f"{escape(str(folder), markup=False)} is missing; is memoryd set up?", EXIT_REFUSED)
    copy_new(path, copy)
    return copy.name, copy


def _ask_about(memory_socket, command: str, path: Path, arg: dict) -> dict:
    """The command asked of memoryd about a file the owner names (handed over in backups/), the
    copy made for it removed whatever the answer."""
    name, copy = _hand_over(path)
    try:
        return _ask(memory_socket, command, {"name": name, **arg})
    finally:
        if copy is not None:
            copy.unlink(missing_ok=True)


def _copy_out(reply: dict, dest: Path) -> None:
    """The file memoryd wrote in backups/ copied where the owner asked, and the reply says so."""
    copy_new(_where(reply["path"]), dest)
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
    if path is not None and os.path.lexists(path):
        fail(f"{escape(str(path), markup=False)} exists; no backup was made", EXIT_REFUSED)
    arg: dict = {"with_sessions": with_sessions}
    if keep is not None:
        arg["keep"] = keep
    reply = _ask(memory_socket, "backup", arg)
    if path is not None:
        _copy_out(reply, path)
    _say(reply, as_json)


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
    _say(_ask_about(memory_socket, "restore", archive, {"replace": replace}), as_json)


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
    if out is not None and os.path.lexists(out):
        fail(f"{escape(str(out), markup=False)} exists; nothing was exported", EXIT_REFUSED)
    reply = _ask(memory_socket, "export", {"format": fmt})
    if out is not None:
        _copy_out(reply, out)
        _say(reply, as_json)
    elif as_json:
        _say(reply, True)
    else:
        # jsonl is ASCII (every other character \u-escaped); markdown is printed escaped.
        data = _where(reply["path"]).read_bytes().decode("utf-8")
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
    reply = _ask_about(memory_socket, "import", file, {"dry_run": dry_run})
    if as_json:
        _say(reply, True)
        return
    for line in reply["lines"]:
        print(escape(line, markup=False))
    show(reply["message"])


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
    arg: dict = {"id": ref}
    if not yes:
        shown = _ask(memory_socket, "forget", {"id": ref, "dry_run": True})
        for text in shown["texts"]:
            print("    " + escape(text, markup=False).replace("\n", "\n    "), file=sys.stderr)
        print(escape(host_paths(shown["message"], default_home()), markup=False), file=sys.stderr)
        arg["check"] = shown["check"]
        try:
            agreed = typer.confirm("Forget it?", default=False, err=True)
        except typer.Abort:  # no answer (end of input)
            agreed = False
        if not agreed:
            fail("not forgotten: nothing was changed", EXIT_REFUSED)
    reply = _ask(memory_socket, "forget", arg)
    _say(reply, as_json)
