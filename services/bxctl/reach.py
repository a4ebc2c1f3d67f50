"""What bxctl says when it cannot finish talking to memoryd: the socket it cannot reach (a
permission, a path that is not a socket, rather than "not answering"), a memoryd that stopped
answering while bxctl waited long for it (found by a probe on a second connection), and a Ctrl-C
(or SIGTERM, SIGHUP), which leaves a request memoryd may still apply, a copy made where the owner
asked, or the session logs of a restored archive part laid."""

import json
import os
import shlex
import signal
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from proto.client import Reply, request, request_raw, request_watched
from proto.errors import ProtoError
from proto.escape import escape
from proto.messages import HEALTH_PROBE, Body, MemoryAdmin, Reindex
from proto.plural import counted
from proto.silent import Silence, silence

ADMIN_TIMEOUT = 60.0  # a read's or a small change's wait for its answer
# A longer wait (a reindex, a backup: minutes on a big home) is watched: every WATCH_EVERY seconds
# memoryd is sent the health checks' probe on a second connection, which its event loop answers
# (a refusal) however busy its workers are, and however few connections its owner socket holds:
# a connection past that cap (one, the command's own, at a low descriptor limit) is answered at
# once with a busy refusal, not queued behind the command. When none has been answered for
# SILENT_LIMIT seconds memoryd has stopped (a SIGSTOP, a hang), and bxctl says so rather than
# wait out the hour.
WATCH_EVERY = 5.0
PROBE_TIMEOUT = 10.0
SILENT_LIMIT = 30.0


class StoppedAnswering(ProtoError):
    """memoryd, asked something long, stopped answering the probe of a second connection."""


def watcher(path: Path):
    """The watch() for proto.client.request_watched: raises StoppedAnswering once memoryd has
    answered no probe for SILENT_LIMIT seconds."""
    heard = time.monotonic()

    def watch() -> None:
        nonlocal heard
        try:
            request_raw(path, "memory_admin", HEALTH_PROBE, timeout=PROBE_TIMEOUT)
            heard = time.monotonic()  # any answer, the probe's refusal included
        except ProtoError:
            if time.monotonic() - heard >= SILENT_LIMIT:
                raise StoppedAnswering(f"no answer in {SILENT_LIMIT:g} seconds") from None

    return watch


def exchange(path: Path, message: Body, reply: type[Reply], timeout: float) -> Reply:
    """request(), watched when the wait is longer than a read's."""
    if timeout <= ADMIN_TIMEOUT:
        return request(path, message, timeout=timeout, reply=reply)
    return request_watched(
        path, message, timeout, reply=reply, watch=watcher(path), every=WATCH_EVERY
    )


# What memoryd was last sent that changes memory, for the line an interrupt prints (cli.py), and
# the last such change memoryd answered as done, for the line lost output prints.
SENT: dict[str, str | None] = {"change": None, "done": None}
# The archive or export bxctl copies where the owner asked: (what, the file, the owner's path).
COPY: dict[str, tuple[str, Path, Path] | None] = {"out": None}


@dataclass
class Laying:
    """The session logs bxctl lays after memoryd has restored the memory files (sessionlay.py)."""

    archive: Path | None = None  # the archive, while bxctl lays or memoryd indexes its logs
    total: int = 0  # the archive's session logs, then (once known) those the home lacks
    lacked: bool = False  # total is those the home lacks
    laid: int = 0
    indexing: bool = False  # all laid; memoryd is being told of them


LAYING = Laying()


def note_laying(archive: Path | None, total: int = 0) -> None:
    """bxctl begins to lay the archive's total session logs (memoryd has restored the memory
    files), or, with None, has laid them and memoryd was told."""
    LAYING.archive, LAYING.total, LAYING.lacked = archive, total, False
    LAYING.laid, LAYING.indexing = 0, False


CHANGING = frozenset(
    {
        "undo",
        "accept",
        "reject",
        "promote",
        "edit",
        "backup",
        "restore",
        "export",
        "import",
        "forget",
    }
)


def note_sent(message: Body) -> None:
    SENT["change"] = _change_in(message) or SENT["change"]


def note_answered(message: Body) -> None:
    """memoryd answered message (not a refusal): a change in it is done."""
    SENT["done"] = _change_in(message) or SENT["done"]


def output_lost_line(why: str) -> str:
    """The output could not be written (why): whether memoryd had done a change first, so that
    the owner does not take the lost output for a change refused."""
    done = SENT["done"]
    if done is None:
        return f"the output could not be written: {why}; nothing was changed"
    return f"the {done} was done, but its output could not be written: {why}; {_where(done)}"


def _change_in(message: Body) -> str | None:
    """The command word of a request that changes memory (or writes into backups/), or None for
    a read, a preview or a dry run."""
    if isinstance(message, Reindex):
        return "reindex"
    if not isinstance(message, MemoryAdmin) or message.command not in CHANGING:
        return None
    try:
        arg = json.loads(message.arg) if message.arg.startswith("{") else {}
    except (ValueError, RecursionError):
        arg = {}
    return None if isinstance(arg, dict) and arg.get("dry_run") is True else message.command


def note_copy(what: str, made: Path, dest: Path) -> None:
    """The archive or export made, about to be copied to dest where the owner asked."""
    COPY["out"] = (what, made, dest)


def interrupted_line(signum: int | None = None) -> str:
    """What an interrupt (Ctrl-C, or signum: SIGTERM, SIGHUP) left: nothing, a copy made where
    the owner asked with memoryd's removal of older ones in doubt, or a request memoryd goes on
    with."""
    how = "interrupted" if signum is None else f"stopped by {signal.Signals(signum).name}"
    copy = COPY["out"]
    # dest did not exist before (check_dest, copy_new) and is linked only once whole and fsync'd
    if copy is not None and os.path.lexists(copy[2]):
        what, made, dest = (escape(str(x), markup=False) for x in copy)
        return (
            f"{how}; the {what} was written to {made} and copied whole to {dest}; memoryd may "
            f"or may not have removed the older {what}s it was asked to: ls "
            "$BOXMAKER_HOME/backups/ shows which are left"
        )
    if LAYING.archive is not None:
        return _laying_line(how)
    change = SENT["change"]
    if change is None:
        return f"{how}; nothing was changed"
    if change == "import":  # memoryd sees its caller gone and stops between two batches
        return (
            f"{how}; memoryd stops the import it was sent at the end of the batch it is applying, "
            "each item before it journalled: bxctl memory log shows what was applied, and "
            "importing the same file again brings the rest"
        )
    return f"{how}; memoryd may still finish the {change} it was sent: {_where(change)}"


def _where(change: str) -> str:
    """Where the owner sees whether change was applied."""
    return {
        "backup": "ls $BOXMAKER_HOME/backups/ shows whether the archive was written",
        "export": "ls $BOXMAKER_HOME/backups/ shows whether the export was written",
        "reindex": "memoryd's log (scripts/stack logs memoryd) says when it ends",
        # a forget cut short stands recorded, and is finished by the same forget run again
        "forget": (
            "bxctl memory log shows what was applied, and bxctl memory stats whether it stopped "
            "part way (then run the same forget again to finish it)"
        ),
    }.get(change, "bxctl memory log shows what was applied")


def unanswered(message: Body) -> str:
    """What a request memoryd received and did not answer (it closed the connection, was killed,
    or stalled past the wait) may have left: "" for a read, else that the change may have been
    applied, or be applied yet, and where to look."""
    change = _change_in(message)
    if change is None:
        return ""
    return f"; the {change} it was sent may have been applied or may still be: {_where(change)}"


def _laying_line(how: str) -> str:
    """An interrupt after memoryd's restore, while bxctl laid the session logs or memoryd indexed
    them: what stands, and how the rest is laid. A restore --replace of the same archive again
    backs up the memory first and lays it again as it is now, then lays only the logs the home
    lacks (sessionlay.py keeps every log that is there); a laid log memoryd was not told of is
    indexed at its next start (its catch-up lists sessions/) or by bxctl reindex."""
    done = LAYING
    later = "memoryd's next start, or bxctl reindex, indexes"
    if done.indexing:
        return (
            f"{how} while memoryd indexed the session logs bxctl laid: memoryd restored the "
            f"memory files and bxctl laid {counted(done.laid, 'session log')}; {later} any not "
            "indexed yet"
        )
    archive = escape(shlex.quote(os.path.abspath(str(done.archive))), markup=False)
    of = f"the {counted(done.total, 'session log')} " + (
        "the home lacked" if done.lacked else "in the archive"
    )
    laid = f"bxctl laid {done.laid:,} of {of}" + (f" ({later} them)" if done.laid else "")
    return (
        f"{how} while laying session logs: memoryd restored the memory files; {laid}; run bxctl "
        f"memory restore --replace {archive} again to lay the rest (memoryd backs up the memory "
        "there first)"
    )


def unreachable_why(path: Path) -> str | None:
    """Why the socket cannot be reached, with what to do: a folder on the way, or the socket,
    that bxctl may not open, a path that is not a socket, memoryd not running (no socket, or
    nobody listening) or busy (its queue full: proto.silent, by errno); None otherwise."""
    shown = escape(str(path), markup=False)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return _silent(path, shown)
    except PermissionError:
        for folder in reversed(Path(os.path.abspath(path)).parents):
            if not os.access(folder, os.X_OK):
                return (
                    f"cannot reach memoryd's socket {shown}: permission denied on the folder "
                    f"{escape(str(folder), markup=False)} (it belongs to uid "
                    f"{_uid(folder)}): run bxctl as that user or as root"
                )
        return f"cannot reach memoryd's socket {shown}: permission denied"
    except OSError:
        return None
    if not stat.S_ISSOCK(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a file"
        return (
            f"{shown} is {kind}, not a socket: --memory-socket (or $BOXMAKER_MEMORY_SOCKET) must "
            "name memoryd's owner socket, $BOXMAKER_HOME/run/owner-memory/admin.sock "
            "(runbook: wrong-socket)"
        )
    if not os.access(path, os.R_OK | os.W_OK):
        return (
            f"cannot open memoryd's socket {shown}: permission denied (it belongs to uid "
            f"{st.st_uid}): run bxctl as that user or as root"
        )
    return _silent(path, shown)


def _silent(path: Path, shown: str) -> str | None:
    """memoryd not running (start the stack) or busy (ask again), or None when neither shows."""
    why = silence(path)
    start = "nothing was sent: start the stack with scripts/stack up (scripts/stack status says"
    if why is Silence.NO_SOCKET:
        return (
            f"memoryd is not answering on {shown}: it is not running (there is no socket there);"
            f" {start} what runs) (runbook: memoryd-unreachable)"
        )
    if why is Silence.REFUSED:
        return (
            f"memoryd is not answering on {shown}: it is not running (nobody listens on the"
            f" socket, left by a memoryd that stopped); {start} what runs)"
            " (runbook: memoryd-unreachable)"
        )
    if why is Silence.BUSY:
        return (
            f"memoryd is not answering on {shown}: it is running but busy (every connection it"
            " holds is taken and its queue is full); nothing was sent: ask again in a few"
            " seconds, and if it stays busy see scripts/stack logs memoryd"
            " (runbook: memoryd-unreachable)"
        )
    return None


def _uid(folder: Path) -> str:
    try:
        return str(folder.stat().st_uid)
    except OSError:
        return "another user"
