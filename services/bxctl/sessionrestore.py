"""bxctl memory restore, once memoryd answered: the archive's session logs laid (sessionlay.py),
memoryd told of them (sessionindex.py), and the answer's words for what was laid, kept, left out
and refused. Nothing is laid when the socket bxctl reached is not the owner socket of the home it
would lay into: sessions/ would then be another home's, and its memoryd would never index them.
"""

import os
from pathlib import Path

from bxctl.reach import LAYING, note_laying
from bxctl.sessionindex import tell_memoryd
from bxctl.sessionlay import SHOWN, Laid, lay, tidy
from proto.messages import is_session_id
from proto.paths import OWNER_ADMIN_SOCKET, under
from proto.plural import counted


def _home_problem(home: Path, memory_socket: Path | None) -> str | None:
    """Why home may not be memoryd's: the socket given is not its owner socket."""
    if memory_socket is None:
        return None
    try:
        if os.path.samefile(memory_socket, under(home, OWNER_ADMIN_SOCKET)):
            return None
    except OSError:
        pass
    return (
        f"the socket given is not {OWNER_ADMIN_SOCKET} under the home {home}, so bxctl does not "
        "know which sessions/ is memoryd's: set BOXMAKER_HOME to memoryd's home"
    )


def after_restore(reply: dict, archive: Path, home: Path, memory_socket: Path | None) -> list[str]:
    """Lay the session logs memoryd's restore answered it checked (reply["session_logs"]); the
    reply then says what was done (its message, and "sessions" for --json). Returns the lines
    naming the refused, at most SHOWN and a count of the rest."""
    held = reply.get("session_logs")
    problem = _home_problem(home, memory_socket)
    if not isinstance(held, int) or isinstance(held, bool) or held <= 0:
        cleared = 0 if problem else tidy(home)
        if cleared:
            reply["message"] = reply.get("message", "") + "; " + _cleared(cleared)
        return []
    if problem is None:
        note_laying(archive, held)  # an interrupt from here on says what is laid, and the rest
    forgot = reply.get("forgotten_sessions", [])
    if problem is None and not _ids(forgot):
        problem = (
            "memoryd named too many of the archive's sessions as holding records the owner made "
            "it forget to lay any safely"
        )
    done = (
        Laid(problem=problem)
        if problem
        else lay(archive, home, reply.get("counts"), frozenset(forgot or ()))
    )
    if done.laid:
        LAYING.indexing = True
        done.indexed = tell_memoryd(home, done.laid)
    note_laying(None)
    reply["sessions"] = {
        "laid": len(done.laid),
        "kept": done.kept,
        "forgotten": done.forgotten,
        "refused": len(done.refused),
        "refusals": done.refused[:SHOWN],
        "problem": done.problem,
        "indexed": done.indexed,
    }
    reply["message"] = reply.get("message", "") + "; " + _said(done)
    lines = [f"refused {line}" for line in done.refused[:SHOWN]]
    if len(done.refused) > SHOWN:
        lines.append(f"and {len(done.refused) - SHOWN:,} more refused")
    return lines


def _ids(value: object) -> bool:
    """True when value is a list of session ids (memoryd's forgotten_sessions)."""
    return isinstance(value, list) and all(isinstance(v, str) and is_session_id(v) for v in value)


def _cleared(n: int) -> str:
    return f"bxctl removed {counted(n, 'partial session log')} a stopped restore left"


def _said(done: Laid) -> str:
    if done.problem is not None:
        said = f"bxctl laid none of them into sessions/: {done.problem}"
        return said + (f"; {_cleared(done.cleared)}" if done.cleared else "")
    laid = f"bxctl laid {counted(len(done.laid), 'session log')} into sessions/"
    # All indexed: said beside them; else said after, in full (what memoryd left aside, and
    # why: sessionindex.py).
    whole = done.indexed in ("memoryd indexed it", "memoryd indexed them")
    if done.laid and whole:
        laid += f" ({done.indexed})"
    parts = [_cleared(done.cleared), laid] if done.cleared else [laid]
    if done.kept:
        parts.append(
            f"{done.kept:,} already there kept as {'it is' if done.kept == 1 else 'they are'}"
        )
    if done.forgotten:
        parts.append(
            f"{counted(done.forgotten, 'log')} left out that "
            f"{'holds' if done.forgotten == 1 else 'hold'} records you made memoryd forget (the "
            "archive keeps them)"
        )
    if done.refused:
        parts.append(f"{len(done.refused):,} refused")
    said = ", ".join(parts)
    return f"{said}; {done.indexed}" if done.laid and not whole else said
