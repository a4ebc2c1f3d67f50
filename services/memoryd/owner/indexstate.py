"""How far the index is with the session logs, as `bxctl memory stats` and `scripts/stack status`
show it: the start's catch-up while it runs, the logs it tried and could not index (tried again),
and the logs left aside until they change (a link, a FIFO, a damaged record). Every sentence is
said only while true: "every session log indexed" only when none of those stands, and no log
holds records past what the index read (written since its session's last finished turn) nor is
shorter than what it read (rewritten or replaced while memoryd ran: the index holds records the
file no longer does), no session it holds is gone from sessions/ (removed while memoryd ran:
recall serves it until memoryd's look drops it, which stats sets off at once, removedlook.py),
and sessions/ itself is a folder memoryd can list (a file or a FIFO there lists no log, and the
sessions the index holds can be read no more). Above them all, the index file itself: removed
or replaced while memoryd runs, nothing is indexed and recall is refused until a reindex
(index/samefile.py), and that is what is said, with what to do.
Then the recall mode's tables: while they are not built (being built after a change of mode, found
no room and tried again, or failed), that is said first, with why, and how recall answers
meanwhile in recall's own words (index/modeprep.py: the spec's search with a note, or a
refusal); the session logs may all be indexed in the spec's tables while the mode's are missing.
"""

import sqlite3

from memoryd.errors import IndexDamaged, IndexUnwritable
from memoryd.index import gone as removed_logs
from memoryd.index import newindex
from memoryd.index.dbfile import DAMAGED
from memoryd.index.samefile import CUT_OFF, DROPPED
from proto.logline import one_line
from proto.plural import counted

# The logs named one by one, the first ones: the count says how many in all.
SHOWN = 10


def state(index, held: list[tuple[str, int | None, int]] | None = None) -> dict:
    """How far the index is with the session logs: the start's catch-up while it runs, and the
    logs a whole pass could not index (each with why), which stay out until memoryd can; and
    "gone", what stands at the index's path, while it is not the file memoryd opened; "mode",
    the recall mode's tables while they are not ready (mode_state)."""
    left = sorted(index.not_indexed.items())
    aside = sorted(index.left_aside.items())
    # Only while it stands: what the owner reads at other times keeps its shape.
    gone = index.gone()
    mode = mode_state(index)
    named = {session for session, _ in left} | {session for session, _ in aside}
    looked = _looked(index, held) if gone is None else []
    late = [s for s, read, size in looked if size > (read or 0) and s not in named]
    short = [(s, read, size) for s, read, size in looked if read is not None and size < read]
    short = [item for item in short if item[0] not in named]
    folder = newindex.folder_problem(index.home) if gone is None else None
    removed, held_total = _removed(index, looked) if gone is None else ([], 0)
    return {
        **({"sessions_folder": folder, "sessions_held": held_total} if folder else {}),
        **({"removed_total": len(removed), "removed": removed[:SHOWN]} if removed else {}),
        **({"unread_total": len(late), "unread": late[:SHOWN]} if late else {}),
        **({"shorter_total": len(short), "shorter": _shorter(short[:SHOWN])} if short else {}),
        **({"gone": gone} if gone is not None else {}),
        **({"mode": mode} if mode is not None else {}),
        "catching_up": list(index.catching_up) if index.catching_up is not None else None,
        "not_indexed_total": len(left),
        "not_indexed": [
            {"log": f"sessions/{session}/0.jsonl", "problem": why} for session, why in left[:SHOWN]
        ],
        "left_aside_total": len(aside),
        "left_aside": [  # a folder named by hand may hold a newline: shown escaped
            {"log": f"sessions/{one_line(session)}/0.jsonl", "problem": why}
            for session, why in aside[:SHOWN]
        ],
    }


def _looked(index, held: list[tuple[str, int | None, int]] | None) -> list:
    """Each session log's (session, bytes the index read of it or None, its size now), sorted:
    held as data.carriers.read_and_held gave it, when the caller looked already (stats sums
    their sizes from the same look).

    A log longer than what was read holds records past it: by the spec, memoryd reads a log when
    its session's turn ends (and at start), so a turn that ended in a tool call, or an owner's
    message not yet answered, waits for the next one. A log no longer than what was read (a
    session just begun, its log empty) holds nothing unread. A log shorter than what was read
    was rewritten or replaced while memoryd ran: the index still holds records the file no
    longer does (recall and search serve them) until the log is read again, at its session's
    next turn, a restart (whose catch-up reads again a log of another size) or a reindex."""
    if held is None:
        from memoryd.data.carriers import read_and_held

        try:
            held = read_and_held(index)
        except (IndexDamaged, IndexUnwritable, OSError):
            return []  # sessions/ that cannot be listed: its own line says so (folder_problem)
    return sorted(held)


def _removed(index, looked: list) -> tuple[list[str], int]:
    """The sessions the index holds whose log is gone from sessions/ (removed while memoryd ran,
    not dropped yet), sorted, and how many sessions it holds: a row per session held and a stat
    per one looked did not find (gone.looked). memoryd's look is set off at once for those."""
    try:
        with index.reader() as conn:
            held = removed_logs.held(conn)
            found = removed_logs.looked(conn, index.home, (s for s, _, _ in looked))
    except (IndexDamaged, IndexUnwritable, sqlite3.Error):
        return [], 0
    if found and index.gone_found is not None:
        index.gone_found(found)
    return sorted(found), len(held)


def _shorter(logs: list[tuple[str, int | None, int]]) -> list[dict]:
    return [
        {
            "log": f"sessions/{session}/0.jsonl",
            "problem": f"{size:,} bytes now, the index read {read or 0:,}",
        }
        for session, read, size in logs
    ]


def mode_state(index) -> dict | None:
    """The recall mode's tables while they are not ready, None once they are: the mode, whether
    they are "waiting" (a build found no room: tried again), "failed" (until a reindex) or
    "building" (after a change of mode, and while the mode starts); how recall answers meanwhile,
    asked of the index as recall asks it: "recall", the refusal every recall gets (None when it
    answers), and "meanwhile", the note each answer then carries, saying why (modeprep.py)."""
    if not index.mode_pending:
        return None
    try:
        index.live  # noqa: B018 - the property is recall's own check, refusing while not ready
        refusal = None
    except (IndexDamaged, IndexUnwritable) as error:
        refusal = str(error)
    if index.mode_waiting:
        state = "waiting"
    elif refusal == DAMAGED:
        state = "failed"
    else:
        state = "building"
    return {"name": index.mode, "state": state, "recall": refusal, "meanwhile": index.meanwhile}


def mode_line(mode: dict) -> str:
    """The line of mode_state()'s answer: the tables' state, then how recall answers meanwhile
    (in recall's own words: its refusal, or the note its answers carry)."""
    name, refusal, note = mode["name"], mode.get("recall"), mode.get("meanwhile")
    head = {
        "waiting": f"recall mode {name}'s tables cannot be built now (memoryd tries again)",
        "failed": f"recall mode {name}'s tables could not be built",
    }.get(mode["state"], f"recall mode {name}'s tables are not built yet (being built)")
    if refusal is not None:
        return f"index: {head}; every recall is refused meanwhile: {refusal}"
    said = f"index: {head}; recall answers meanwhile by the spec's search over the rows indexed"
    return f"{said}, each answer noting: {note}" if note else said


def _listed(head: str, total: int, shown: list[dict]) -> list[str]:
    lines = [head] + [f"  {item['log']}: {item['problem']}" for item in shown]
    if total > len(shown):
        lines.append(f"  (and {total - len(shown):,} more)")
    return lines


def lines(found: dict | None) -> list[str]:
    """The lines of state()'s answer (none without one)."""
    if found is None:
        return []
    if (gone := found.get("gone")) is not None:
        return [gone_line(gone)]
    # First: while it stands, what follows says where the logs are, not that recall works.
    said = [mode_line(mode)] if (mode := found.get("mode")) is not None else []
    if found["catching_up"] is not None:
        read, logs = found["catching_up"]
        return [*said, f"index: catching up, {read:,} of {logs:,} session logs read"]
    if (folder := found.get("sessions_folder")) is not None:
        said.append(folder_line(folder, found.get("sessions_held", 0)))
    total, aside = found["not_indexed_total"], found.get("left_aside_total", 0)
    unread, shorter = found.get("unread_total", 0), found.get("shorter_total", 0)
    removed = found.get("removed_total", 0)
    if not total and not aside and not unread and not shorter and not removed:
        return said if folder is not None else [*said, "index: every session log indexed"]
    if removed:
        one = removed == 1
        head = (
            f"index: {counted(removed, 'session')} removed from sessions/ while memoryd ran"
            f" {'is' if one else 'are'} still in the index: recall and search serve"
            f" {'its' if one else 'their'} records until memoryd drops {'it' if one else 'them'}"
            " (it looks every 30 s, and now):"
        )
        shown = [{"log": f"sessions/{s}/0.jsonl", "problem": "removed"} for s in found["removed"]]
        said += _listed(head, removed, shown)
    if shorter:
        head = (
            f"index: {counted(shorter, 'session log')} {'is' if shorter == 1 else 'are'} shorter"
            " than the index read (rewritten or replaced?): recall and search may serve records"
            f" {'it' if shorter == 1 else 'they'} no longer {'holds' if shorter == 1 else 'hold'}"
            " until read again, at the session's next turn, a restart or bxctl reindex:"
        )
        said += _listed(head, shorter, found["shorter"])
    if unread:
        head = (
            f"index: {counted(unread, 'session log')} {'holds' if unread == 1 else 'hold'} records"
            " written since their session's last finished turn (read when its next turn ends,"
            " at a restart or by bxctl reindex):"
        )
        shown = [
            {"log": f"sessions/{s}/0.jsonl", "problem": "not read yet"} for s in found["unread"]
        ]
        said += _listed(head, unread, shown)
    if total:
        head = (
            f"index: {counted(total, 'session log')} not indexed (memoryd tries again every 30 s"
            " and when a turn ends):"
        )
        said += _listed(head, total, found["not_indexed"])
    if aside:
        head = (
            f"index: {counted(aside, 'session log')} left aside, wholly or from a damaged record"
            " (read again at its session's next turn, a restart or bxctl reindex):"
        )
        said += _listed(head, aside, found["left_aside"])
    return said


def folder_line(problem: str, held: int) -> str:
    """The index line while sessions/ is not a folder memoryd can list (newindex.folder_problem):
    no log under it is indexed, and the sessions the index holds stay as they were."""
    what = problem if problem.startswith("cannot") else f"is {problem}"
    if not held:
        return f"index: sessions/ {what}: no session log can be indexed"
    return (
        f"index: sessions/ {what}: the {counted(held, 'session')} the index holds cannot be"
        f" read, and recall and search serve what was indexed of {'it' if held == 1 else 'them'}"
        " until sessions/ is a folder memoryd can list again"
    )


def gone_line(gone: str) -> str:
    """The index line while the index file is not the one memoryd opened: gone says what stands
    at its path ("removed", "replaced by a folder"...); what is not a file is moved away first,
    since a reindex leaves it as it is (index/dbfile.in_the_way)."""
    if gone.startswith(DROPPED):
        return (
            f"index: index/memory.sqlite3 was {gone}: nothing is indexed and recall and search"
            " are refused; rebuild it with bxctl reindex once there is room (runbook:"
            " memory-index-damaged)"
        )
    if gone.startswith(CUT_OFF):  # a link at index/: what is moved back is read on
        first = "put the folder back in its place, or remove the link, then "
    elif gone in ("removed", "replaced by another file"):
        first = ""
    else:
        first = "move it away, then "
    return (
        f"index: index/memory.sqlite3 was {gone} while memoryd ran: nothing is indexed and recall"
        f" and search are refused; {first}rebuild it with bxctl reindex (runbook:"
        " memory-index-damaged)"
    )
