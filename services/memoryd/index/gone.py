"""Sessions the owner removed: a session whose log is gone from sessions/ leaves the index too.

The index is derived from sessions/ and notes.md (spec 6). A log that shrank is indexed again
(indexer.py); one that is gone -- sessions/<id>/ removed, or its 0.jsonl -- has its rows (through
the indexer's delete, so the recall modes' tables follow) and its progress dropped, its label
left behind for a log made again under its name (labelkept.py): at the catch-up
after a start, for each session the progress table holds that the start's listing of sessions/
did not find, and when session_updated names it. Finding them costs a row per session held and a
stat per one not listed, never a scan of the rows. A session removed while memoryd runs sends no
session_updated again: memoryd looks for such sessions every LOOK_SECONDS, and at once when stats
finds one (removedlook.py), at a cost of a row and a stat per session held (looked), so recall
stops serving a conversation the owner removed without waiting for a restart. A log memoryd may
not read (a link, a FIFO, sessions/ not a folder or not searchable) is not gone: its rows stay as
they are until the owner fixes it or reindexes.

remove() runs on the index's writer in a transaction of its own; the other functions run inside
the caller's and never commit.
"""

import logging
import os
import sqlite3
from collections.abc import Iterable

from memoryd.home import Home
from memoryd.index import indexer, labelkept, newindex
from proto.messages import is_session_id

log = logging.getLogger("memoryd.index.index")

PREFIX = "sessions/"
# Sessions per DELETE statement (each scans the rows once; SQLite binds at most 32,766 values).
CHUNK = 500


def held(conn: sqlite3.Connection) -> list[str]:
    """The sessions whose log the index holds progress for (its primary key's range: one row
    per log read)."""
    found = conn.execute(
        "SELECT log FROM progress WHERE log >= ? AND log < ?", (PREFIX, PREFIX[:-1] + "0")
    )
    sessions = []
    for (name,) in found:
        session = str(name).removeprefix(PREFIX).removesuffix("/0.jsonl")
        if is_session_id(session) and indexer.log_name(session) == name:
            sessions.append(session)
    return sessions


def holds(conn: sqlite3.Connection, session: str) -> bool:
    row = conn.execute("SELECT 1 FROM progress WHERE log = ?", (indexer.log_name(session),))
    return row.fetchone() is not None


def gone(conn: sqlite3.Connection, home: Home, listed: Iterable[str]) -> list[str]:
    """The sessions the index holds that are not listed and whose log is not there (a log that
    cannot be read for another reason is not gone, nor is any while sessions/ itself is not a
    folder: a link to a disk not mounted, say, whose logs are back once it is)."""
    if newindex.folder_problem(home) is not None:
        return []
    known = set(listed)
    return [
        session
        for session in held(conn)
        if session not in known
        and isinstance(indexer.log_problem(home, session), FileNotFoundError)
    ]


def looked(conn: sqlite3.Connection, home: Home, listed: Iterable[str] = ()) -> list[str]:
    """The sessions the index holds whose log is gone now, but for those listed (a listing of
    sessions/ just taken found them): one stat of each other's log, and the two of log_problem
    for one that stat did not find (sessions/<id> a dangling link is skipped, not gone). On a
    reader's connection too: it writes nothing."""
    known = set(listed)
    return logs_gone(home, [session for session in held(conn) if session not in known])


def logs_gone(home: Home, sessions: Iterable[str]) -> list[str]:
    """Those of sessions whose log is gone now (looked's stats, with no connection held: a
    reindex's swap need not wait for them)."""
    if newindex.folder_problem(home) is not None:
        return []
    base = os.fspath(home.sessions)
    found = []
    for session in sessions:
        try:
            os.lstat(f"{base}/{session}/0.jsonl")
        except FileNotFoundError:
            if isinstance(indexer.log_problem(home, session, base), FileNotFoundError):
                found.append(session)
        except OSError:
            continue  # not a folder, not searchable: not gone
    return found


def drop_found(index, sessions: list[str]) -> int:
    """On the index's writer: drop those of sessions (found gone by looked, on a reader) that
    the index still holds and whose log is still gone; how many."""
    with index._damage_refused("the removed sessions"):
        conn = index._write()
        there = newindex.folder_problem(index.home) is None
        removed = [
            session
            for session in sessions
            if there
            and holds(conn, session)
            and isinstance(indexer.log_problem(index.home, session), FileNotFoundError)
        ]
    remove(index, removed)
    return len(removed)


def drop(conn: sqlite3.Connection, sessions: list[str]) -> None:
    """Delete the rows and the progress of sessions, leaving the label of each."""
    for at in range(0, len(sessions), CHUNK):
        chunk = tuple(sessions[at : at + CHUNK])
        marks = ",".join("?" * len(chunk))
        indexer._delete_rows(conn, f"kind = 'session' AND session IN ({marks})", chunk)
        # A session's label stays behind it (labelkept.py): a log made again under its name
        # is read from it, never from a clean one.
        labelkept.leave(conn, [indexer.log_name(session) for session in chunk])


def remove(index, sessions: list[str]) -> None:
    """On the index's writer: delete the rows and progress of sessions whose log is gone, one
    line for each. Their text is overwritten in the file, as a forget's is: the owner removed
    the conversation."""
    if not sessions:
        return
    conn: sqlite3.Connection = index._write()
    (secure,) = conn.execute("PRAGMA secure_delete").fetchone()
    conn.execute("PRAGMA secure_delete = ON")
    try:
        with index._damage_refused("the removed sessions"), index._transaction(conn):
            drop(conn, sessions)
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(secure)}")
    for session in sessions:
        log.info(
            "session log %s: gone; its records left the index", index.home.session_log(session)
        )
