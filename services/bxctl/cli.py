"""bxctl: reindex, and memory log, undo, pending, accept, reject (spec 10).

One typer app per command group, joined with add_typer. Every command talks to memoryd's owner
socket (--memory-socket, default {home}/run/owner-memory/admin.sock). Whatever memoryd answers is
printed through proto's escape(), so an entry cannot render as markup or mention anyone; an
underscore inside a word (my_sess_1) is left alone, since it cannot start emphasis, so ids read as
they are. Errors are one line on stderr and an exit status: 1 refused, 3 memoryd not answering.
"""

import re
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from proto.client import RemoteError, request
from proto.config import default_home, host_paths
from proto.errors import FrameTimeout, PeerClosed, ProtoError, Unreachable
from proto.escape import escape
from proto.messages import Body, MemoryAdmin, Reindex

EXIT_REFUSED = 1
EXIT_UNREACHABLE = 3
ADMIN_TIMEOUT = 60.0
REINDEX_TIMEOUT = 3600.0

app = typer.Typer(add_completion=False, no_args_is_help=True, help="boxmaker's owner commands.")
memory_app = typer.Typer(no_args_is_help=True, help="List and undo memory writes; review them.")
app.add_typer(memory_app, name="memory")


def default_socket() -> Path:
    return default_home() / "run" / "owner-memory" / "admin.sock"


MemorySocket = Annotated[
    Path | None,
    typer.Option(
        "--memory-socket",
        envvar="BOXMAKER_MEMORY_SOCKET",
        help="memoryd's owner socket [default: $BOXMAKER_HOME/run/owner-memory/admin.sock]",
    ),
]


def fail(text: str, code: int) -> NoReturn:
    print(f"bxctl: {text}", file=sys.stderr)
    raise typer.Exit(code)


def ask(socket: Path | None, message: Body, timeout: float = ADMIN_TIMEOUT) -> Body:
    path = socket or default_socket()
    try:
        return request(path, message, timeout=timeout)
    except RemoteError as e:
        fail(escape_ids(host_paths(str(e), default_home())), EXIT_REFUSED)
    except (Unreachable, PeerClosed):
        fail(f"memoryd is not answering on {path} (runbook: memoryd-unreachable)", EXIT_UNREACHABLE)
    except FrameTimeout:
        fail(
            f"memoryd did not answer on {path} in {timeout:g} seconds "
            "(runbook: memoryd-unreachable)",
            EXIT_UNREACHABLE,
        )
    except ProtoError as e:
        fail(f"bad answer from memoryd on {path}: {escape(str(e))}", EXIT_REFUSED)


_INTRAWORD_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")


def escape_ids(text: str) -> str:
    """escape(), but an underscore between two letters or digits stays as it is (inert markup)."""
    return "_".join(escape(part) for part in _INTRAWORD_UNDERSCORE.split(text))


def show(text: str) -> None:
    """Lines of ids, times and file names (log, undo, accept, reject)."""
    print(escape_ids(text))


def show_pending(text: str) -> None:
    """The pending list: indented lines hold a write's entries, escaped in full; heads are ids."""
    print(
        "\n".join(
            escape(line) if line.startswith(" ") else escape_ids(line) for line in text.split("\n")
        )
    )


def _progress(done: threading.Event) -> None:
    """Show elapsed time on a terminal while a reindex runs."""
    start = time.monotonic()
    frames = "|/-\\"
    i = 0
    while not done.wait(0.25):
        sys.stderr.write(f"\rreindexing {frames[i % 4]} {time.monotonic() - start:5.1f}s")
        sys.stderr.flush()
        i += 1
    sys.stderr.write("\r" + " " * 30 + "\r")
    sys.stderr.flush()


def counted(n: int, noun: str) -> str:
    """1 note, 2 notes, 1,208 records."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


@app.command()
def reindex(memory_socket: MemorySocket = None) -> None:
    """Rebuild the memory index from sessions/ and notes.md."""
    done = threading.Event()
    spinner = None
    if sys.stderr.isatty():
        spinner = threading.Thread(target=_progress, args=(done,), daemon=True)
        spinner.start()
    try:
        reply = ask(memory_socket, Reindex(), timeout=REINDEX_TIMEOUT)
    finally:
        done.set()
        if spinner is not None:
            spinner.join()
    print(
        f"reindexed: {counted(reply.logs, 'log')}, {counted(reply.records, 'record')}, "
        f"{counted(reply.notes, 'note')}"
    )


@memory_app.command("log")
def memory_log(
    n: Annotated[int, typer.Argument(min=1, max=10_000, help="how many edits")] = 10,
    memory_socket: MemorySocket = None,
) -> None:
    """Print the last N edits: id, time, session, action, file."""
    show(ask(memory_socket, MemoryAdmin(command="log", arg=str(n))).text)


@memory_app.command()
def undo(
    edit_id: Annotated[str, typer.Argument(metavar="ID")], memory_socket: MemorySocket = None
) -> None:
    """Undo an edit, if it is the latest of its file and the file still holds what it left."""
    show(ask(memory_socket, MemoryAdmin(command="undo", arg=edit_id)).text)


@memory_app.command()
def pending(memory_socket: MemorySocket = None) -> None:
    """List the writes waiting for the owner (review on)."""
    show_pending(ask(memory_socket, MemoryAdmin(command="pending", arg="")).text)


@memory_app.command()
def accept(
    pending_id: Annotated[str, typer.Argument(metavar="ID")], memory_socket: MemorySocket = None
) -> None:
    """Apply a pending write, checked against the file as it is now."""
    show(ask(memory_socket, MemoryAdmin(command="accept", arg=pending_id)).text)


@memory_app.command()
def reject(
    pending_id: Annotated[str, typer.Argument(metavar="ID")], memory_socket: MemorySocket = None
) -> None:
    """Discard a pending write (journalled)."""
    show(ask(memory_socket, MemoryAdmin(command="reject", arg=pending_id)).text)


def main() -> None:
    app()
