"""Session logs caught up on the writer a part at a time, and what is left aside and why.

Index.catch_up_session_part reads one part of a log's new records (indexer.index_session_part) in
its own transaction: a log that is gone has its rows dropped (gone.py) and is SessionUnknown; a
link or a FIFO where the log should be is left aside, skipped whole, and so is a log whose reading
stopped at a damaged record, until it changes. What is left aside (Index.left_aside) is replaced
whole, never changed in place, for stats reads it from another thread. catch_up_all does it all on
one thread, notes.md too. Kept apart from the index (index.py), which opens the file and holds the
writer these run on.
"""

import logging

from memoryd.errors import SessionUnknown
from memoryd.index import gone, indexer, newindex
from proto.files import NotRegular

# Logged under the index's name, as before the catch-up had a module of its own.
log = logging.getLogger("memoryd.index.index")


def listed(index) -> list[str] | None:
    """The sessions whose log can be indexed, by name, or None when sessions/ cannot be listed
    now; what is left aside updated with what this listing skipped (Index.listed)."""
    skipped: dict[str, str] = {}
    found = newindex.listed_sessions(index.home, skipped)
    if found is None:
        return None
    names = set(found)
    damaged = {k: v for k, v in index.left_aside.items() if k in names and k not in skipped}
    index.left_aside = {**damaged, **skipped}
    return found


def aside(index, session: str, why: str | None) -> None:
    """Note that a session's log is left aside, and why (None: it is not)."""
    if why is not None:
        index.left_aside = {**index.left_aside, session: why}
    elif session in index.left_aside:
        index.left_aside = {k: v for k, v in index.left_aside.items() if k != session}


def catch_up_part(index, session: str) -> tuple[int, bool]:
    """Index one part of a session's new records: (rows added, read to the end)
    (Index.catch_up_session_part)."""
    problem = indexer.log_problem(index.home, session)
    if isinstance(problem, FileNotFoundError):
        index._aside(session, None)
        if gone.holds(index._write(), session):
            gone.remove(index, [session])
        raise SessionUnknown(f"no session {session} under sessions/")
    if problem is not None and not isinstance(problem, NotRegular):
        raise problem  # a folder memoryd may not search, say: tried again (catchup.py)
    if problem is not None:
        log.warning("session log %s: skipped: %s", index.home.session_log(session), problem)
        index._aside(session, problem.strerror or str(problem))
        raise SessionUnknown(f"session {session}: {problem}")
    conn = index._write_same()
    part = indexer.one_part()
    with index._damage_refused(f"session {session}"):
        with index._transaction(conn):
            name = indexer.log_name(session)
            done = indexer.index_session_part(
                conn, index.home, session, index.settings, part=part, kept=index._carried.get(name)
            )
    if done[1]:
        index._carried.pop(name, None)
        index._aside(session, part.damaged)
    return done


def catch_up_all(index) -> int:
    """Catch up every session log and notes.md on this thread; the rows added
    (Index.catch_up_all)."""
    added = 0
    sessions = index.sessions()
    index.drop_removed(sessions)
    for session in sessions:
        try:
            added += index.catch_up_session(session)
        except (OSError, SessionUnknown) as error:
            log.warning("session log %s: skipped: %s", index.home.session_log(session), error)
    # All of notes.md here, part after part: nothing is handed to memoryd's catch-up.
    left, index.notes_left = index.notes_left, None
    try:
        added += index.catch_up_notes()
        while index.notes_behind is not None:
            added += index.catch_up_notes()
    finally:
        index.notes_left = left
    index.catching_up = None
    return added
