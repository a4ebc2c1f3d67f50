"""bxctl memory log, undo, pending, accept, reject (spec 10), paged and with --json.

The plain forms send the spec's plain arg ("10", an id, ""); --from or --json send a JSON arg. An
ID not of an id's shape (usage.py) is a usage error and is not sent.
"""

from typing import Annotated

import typer

from bxctl import usage
from bxctl.common import Json, MemorySocket, admin, print_json_text, show, show_pending

app = typer.Typer()

FromEdit = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="ID",
        callback=usage.edit_id,
        help="Start at this edit (the next page of a long log).",
    ),
]
# An ID is checked for its shape here (usage.py), so a mistyped one is a usage error, not sent.
EditId = Annotated[str, typer.Argument(metavar="ID", callback=usage.edit_id)]
PendingId = Annotated[str, typer.Argument(metavar="ID", callback=usage.pending_id)]
FromPending = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="ID",
        callback=usage.pending_id,
        help="Start at this pending edit (the next page).",
    ),
]


def answer(
    memory_socket,
    command: str,
    plain: str,
    structured: dict,
    as_json: bool,
    paged: bool = False,
    printer=show,
) -> None:
    """Send the plain arg unless --json or a page was asked for; print the answer."""
    if as_json or paged or plain.startswith("{"):
        arg = {k: v for k, v in structured.items() if v is not None}
        if as_json:
            arg["json"] = True
        text = admin(memory_socket, command, arg)
    else:
        text = admin(memory_socket, command, plain)
    if as_json:
        print_json_text(text)
    else:
        printer(text)


@app.command("log")
def memory_log(
    n: Annotated[int, typer.Argument(min=1, max=10_000, help="How many edits.")] = 10,
    start: FromEdit = None,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Print the last N edits (or N from --from ID): id, time, session, action, file."""
    answer(memory_socket, "log", str(n), {"n": n, "from": start}, as_json, start is not None)


@app.command()
def undo(
    edit_id: EditId,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Undo an edit, if it is the latest of its file and the file still holds what it left."""
    answer(memory_socket, "undo", edit_id, {"id": edit_id}, as_json)


@app.command()
def pending(
    start: FromPending = None, as_json: Json = False, memory_socket: MemorySocket = None
) -> None:
    """List the writes waiting for the owner (review on), a page at a time."""
    paged = start is not None
    answer(memory_socket, "pending", "", {"from": start}, as_json, paged, show_pending)


@app.command()
def accept(
    pending_id: PendingId,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Apply a pending write, checked against the file as it is now."""
    answer(memory_socket, "accept", pending_id, {"id": pending_id}, as_json)


@app.command()
def reject(
    pending_id: PendingId,
    as_json: Json = False,
    memory_socket: MemorySocket = None,
) -> None:
    """Discard a pending write (journalled)."""
    answer(memory_socket, "reject", pending_id, {"id": pending_id}, as_json)
