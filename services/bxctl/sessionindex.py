"""bxctl memory restore, last: memoryd told of the session logs bxctl laid, and what it did.

memoryd hears session_updated for each laid log over its loopd socket and indexes it as it indexes
a finished turn. Its answer is ok even when it left the log aside (a damaged record: the reading
stops there, and what comes after stays out until the log changes or a reindex), so an ok is not
"indexed". What memoryd did is what its index state says (`bxctl memory stats`: the logs left
aside, those it could not index yet and those holding bytes it has not read, each with why),
asked of it over the owner socket once every log was told of: the answer counts the logs indexed,
names those that were not, and says "indexed" of none it left aside. The state names the first
few of each kind, in order, and counts the rest: a laid log past the last one named while more
are counted is said to be unknown here, with where to see it, never guessed.

bxctl reindex asks the same state for the logs the new index left out (reindex_said); when it is
not answered, those counts are said to be not known, never 0.
"""

import json
import time
from pathlib import Path

from bxctl.common import safe_json, strict_json
from proto.client import RemoteError, request
from proto.errors import PeerClosed, ProtoError, Unreachable
from proto.messages import (
    MemoryAdmin,
    MemoryAdminReply,
    Ok,
    Reindexed,
    SessionUpdated,
    reindexed_line,
)
from proto.paths import LOOP_MEMORY_SOCKET, OWNER_ADMIN_SOCKET, under
from proto.plural import counted

INDEX_TIMEOUT = 120.0  # memoryd indexes a long log a part at a time before it answers
STATE_TIMEOUT = 60.0
BUSY = " is busy: "  # in the refusal of a connection over the socket's cap (proto/busy.py)
BUSY_TRIES = 5
BUSY_WAIT = 0.2  # seconds between them
NAMED = 3  # logs named one by one in the answer; the rest counted
WHY_CHARS = 160
AGAIN = "memoryd reads such a log again at its session's next turn, a restart or bxctl reindex"


def tell_memoryd(home: Path, sessions: list[str]) -> str:
    """Ask memoryd to index each laid session over its loopd socket; what came of it, in words."""
    socket = under(home, LOOP_MEMORY_SOCKET)
    them = "it" if len(sessions) == 1 else "them"
    told, failed, first = [], 0, ""
    for session in sessions:
        try:
            request(socket, SessionUpdated(session=session), timeout=INDEX_TIMEOUT, reply=Ok)
        except (Unreachable, PeerClosed):
            return f"memoryd indexes {them} at its next start (its loopd socket does not answer)"
        except ProtoError as e:
            failed += 1
            first = first or str(e)[:200]
        else:
            told.append(session)
    said = indexed(home, told, len(sessions))
    if failed:
        said += (
            f"; {counted(failed, 'log')} not indexed now ({first}): memoryd indexes "
            f"{'it' if failed == 1 else 'them'} at its next start"
        )
    return said


def indexed(home: Path, told: list[str], laid: int) -> str:
    """What memoryd did with the logs told (of laid in all), from its index state."""
    if not told:
        return _head(0, 0, laid)
    state = index_state(home)
    if state is None:
        one = len(told) == 1
        return (
            f"memoryd was told of {'it' if one else counted(len(told), 'log')}, but did not "
            f"answer for its index: bxctl memory stats says whether {'it' if one else 'each'} "
            "was indexed"
        )
    if isinstance(state.get("gone"), str):
        return (
            f"memoryd indexed none of them: its index file was {state['gone']} while it ran "
            "(bxctl memory stats says what to do)"
        )
    aside, aside_unknown = _named(state, "left_aside", told)
    waiting, waiting_unknown = _named(state, "not_indexed", told)
    unread, unread_unknown = _named(state, "unread", told)  # bytes past what the index read
    waiting = {**unread, **waiting}
    unknown = sorted((aside_unknown | waiting_unknown | unread_unknown) - set(aside) - set(waiting))
    done = [s for s in told if s not in aside and s not in waiting and s not in unknown]
    parts = [_head(len(done), len(told), laid)]
    if aside:
        parts.append(f"{counted(len(aside), 'log')} left aside: {_listed(aside)}; {AGAIN}")
    if waiting:
        parts.append(f"{counted(len(waiting), 'log')} not indexed yet: {_listed(waiting)}")
    if unknown:
        parts.append(
            f"for {counted(len(unknown), 'more log')}, see bxctl memory stats (it lists more "
            "logs left aside than this answer names)"
        )
    return "; ".join(parts)


def _head(done: int, told: int, laid: int) -> str:
    if done == told == laid:
        return "memoryd indexed it" if laid == 1 else "memoryd indexed them"
    if laid == 1:
        return "memoryd did not index it"
    return f"memoryd indexed {done:,} of them" if done else "memoryd indexed none of them"


def index_state(home: Path) -> dict | None:
    """memoryd's index state (stats' "index"), asked over its owner socket as a program reads
    it (its refs not counted as printed); None when it does not answer or answers no state."""
    return index_state_at(under(home, OWNER_ADMIN_SOCKET))


def index_state_at(socket: Path) -> dict | None:
    """index_state, asked over the owner socket at socket."""
    arg = json.dumps({"days": 1, "json": True, "shown": False})
    message = MemoryAdmin(command="stats", arg=arg)
    try:
        reply = _ask_past_busy(socket, message)
        state = strict_json(reply.text).get("index")
    except (ProtoError, ValueError, RecursionError, AttributeError):
        return None
    return state if isinstance(state, dict) else None


def _ask_past_busy(socket: Path, message: MemoryAdmin) -> MemoryAdminReply:
    """The answer, asked again a few times while memoryd refuses it as busy: at a cap of one
    owner connection, the command just answered may hold it a moment more (its close not yet
    seen), and the state is asked right after."""
    for _ in range(BUSY_TRIES - 1):
        try:
            return request(socket, message, timeout=STATE_TIMEOUT, reply=MemoryAdminReply)
        except RemoteError as e:
            if BUSY not in str(e):
                raise
        time.sleep(BUSY_WAIT)
    return request(socket, message, timeout=STATE_TIMEOUT, reply=MemoryAdminReply)


# What reindex adds when memoryd did not answer for its index after the reindex.
NOT_KNOWN = (
    "; session logs left aside or not indexed: not known (memoryd did not answer for its index; "
    "bxctl memory stats names them)"
)


def left_out(state: dict | None) -> tuple[int | None, int | None]:
    """The session logs the index left aside and those it has not indexed, as the state counts
    them; None for a count it does not give (no state: memoryd did not answer for its index)."""
    if state is None:
        return None, None
    counts = (state.get(k) for k in ("left_aside_total", "not_indexed_total"))
    aside, unread = (n if isinstance(n, int) and not isinstance(n, bool) else None for n in counts)
    return aside, unread


def reindex_said(reply: Reindexed, state: dict | None, as_json: bool) -> str:
    """What bxctl reindex prints: the spec's sentence with what the new index left out, from the
    state asked once the reindex was done; a count not known is said so (null in the JSON)."""
    aside, unread = left_out(state)
    if as_json:
        return safe_json({**reply.model_dump(), "left_aside": aside, "not_indexed": unread})
    said = reindexed_line(reply, aside or 0, unread or 0)
    return said if aside is not None and unread is not None else said + NOT_KNOWN


def _named(state: dict, kind: str, told: list[str]) -> tuple[dict[str, str], set[str]]:
    """Of told, those the state names under kind (session: why), and those it may count
    without naming: past the last one named (the state names the first ones, sorted) while its
    total says more are left out."""
    shown = state.get(kind)
    shown = shown if isinstance(shown, list) else []
    names: dict[str, str] = {}
    for item in shown:
        if isinstance(item, str):  # "unread" names the sessions alone
            names[item] = "not read yet"
            continue
        log = item.get("log") if isinstance(item, dict) else None
        if isinstance(log, str) and log.startswith("sessions/") and log.endswith("/0.jsonl"):
            session = log.split("/")[1]
            names[session] = _why(str(item.get("problem", "")), session)
    total = state.get(f"{kind}_total")
    more = isinstance(total, int) and total > len(names)
    last = max(names) if names else ""
    found = {s: names[s] for s in told if s in names}
    unsure = {s for s in told if more and s not in names and s > last}
    return found, unsure


def _why(problem: str, session: str) -> str:
    """memoryd's why, short: the log's path in it (memoryd's own, as its container sees it) is
    left out, as the answer names the log before it."""
    head, path, tail = problem.partition(f"/sessions/{session}/0.jsonl: ")
    if path and (cut := head.find(": /")) >= 0:
        problem = head[: cut + 2] + tail
    return problem if len(problem) <= WHY_CHARS else problem[: WHY_CHARS - 3] + "..."


def _listed(logs: dict[str, str]) -> str:
    shown = [f"sessions/{s}/0.jsonl ({why})" for s, why in sorted(logs.items())[:NAMED]]
    if len(logs) > NAMED:
        shown.append(f"and {len(logs) - NAMED:,} more (bxctl memory stats names them)")
    return ", ".join(shown)
