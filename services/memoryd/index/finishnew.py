"""A reindex's new file caught up with what was written during its build, then swapped in.

The build (newindex.py, in a child process: rebuild.py) reads sessions/ and notes.md while recall
and writes go on; on the writer, finish catches the new file up with what they wrote meanwhile,
counting by kind what that catch-up added and dropped (a restore or a forget during the build
changes what the build counted), then puts it in place of the index (swap.py) and says in one
line what the new file holds. Kept apart from the index (index.py), which only starts it.
"""

import logging
import os
import sqlite3

from memoryd.index import forgetsmeanwhile, indexer, newindex, swap
from memoryd.index.connections import ZERO_FREED_PAGES
from memoryd.index.dbfile import in_the_way
from memoryd.index.newindex import Rebuilt
from memoryd.index.notescatchup import deletions, notes_reached
from memoryd.search import vocab
from proto.plural import counted

# Logged under the index's name, as before the swap's catch-up had a module of its own.
log = logging.getLogger("memoryd.index.index")

NOTE_KINDS = ("noted", "moved", "dropped")


def finish(index, built: Rebuilt) -> tuple[int, int, int]:
    """On the index's writer: catch built up and swap it in (Index.finish_new). Returns (logs,
    records, notes) of the new index."""
    seen = index.notes_seen.look()  # before the catch-up reads notes.md
    # notes.md changed since the old index read it: the new one may number its notes anew.
    renumbered = seen != index.notes_seen.read
    conn = sqlite3.connect(built.path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(ZERO_FREED_PAGES)
        count_changes(conn)
        before = deletions(conn)
        with index._transaction(conn):
            skipped: dict[str, str] = {}
            sessions = newindex.indexable_sessions(index.home, skipped)
            damaged: dict[str, str] = {}
            index.left_out = newindex.catch_up(conn, index.home, index.settings, sessions, damaged)
            deleted = deletions(conn) != before
            unread = nothing_read(conn, damaged)
        # What the catch-up added and dropped: a restore or a forget during the build
        # changed what the build counted, and the answer is what the new file holds.
        changed = dict(conn.execute("SELECT kind, n FROM temp.caught").fetchall())
    finally:
        conn.close()  # the last connection: checkpoints and removes the new file's WAL
    with open(built.path, "rb") as f:
        os.fsync(f.fileno())
    # Rows of what was forgotten during the build, deleted by the catch-up, leave their
    # words in the new file's term lists: merged once it is in use (forgetsmeanwhile.py).
    forgetsmeanwhile.owe_if_changed(index, deleted)
    in_the_way(index.path)  # a folder put there during the build is not renamed over
    index.stop_warming()
    with index._gate.exclusive():
        index._close_all()
        # The connections are opened again whatever happens (swap.py): on the old file when
        # the rename failed, on the new one once it is made, synced or not.
        try:
            unsynced = swap.put_in_place(built.path, index.path)
        except BaseException:
            swap.reopen(index, replaced=False)
            raise
        vocab.forget()  # nothing counted in the old file is kept
        swap.reopen(index, replaced=True)
        try:
            reached = notes_reached(index._write())
        except sqlite3.Error:  # not known: a forget's note number is checked again
            reached = None
        index.notes_seen.done(seen, renumbered=renumbered, reached=reached)
        index.notes_behind = None  # the new file holds all of notes.md (newindex.catch_up)
    if index._live is not None:
        index._live.reset()
    records = built.records + changed.get("session", 0)
    notes = built.notes + sum(changed.get(kind, 0) for kind in NOTE_KINDS)
    index.left_aside = {**skipped, **damaged}  # what the new file holds, no more
    # The logs the new file holds a reading of, wholly or up to a damaged record: one damaged
    # at its first record is left aside, not reindexed.
    logs = len(sessions) - len(index.left_out) - unread
    log.info(
        "index %s: rebuilt from %s, %s, %s%s",
        index.path,
        counted(logs, "log"),
        counted(records, "record"),
        counted(notes, "note"),
        f"; {counted(len(index.left_out), 'log')} left out" if index.left_out else "",
    )
    if unsynced is not None:
        raise swap.not_synced(index, unsynced, logs, records, notes)
    return logs, records, notes


def nothing_read(conn: sqlite3.Connection, damaged: dict[str, str]) -> int:
    """How many of the damaged logs the file holds no record of (damaged at their first)."""
    states = (indexer.load_state(conn, indexer.log_name(session)) for session in damaged)
    return sum(1 for state in states if state is None or state.records == 0)


def count_changes(conn: sqlite3.Connection) -> None:
    """Count, by kind, the rows added to and removed from sources on conn from now on (in
    temp.caught, gone with the connection)."""
    conn.execute("CREATE TEMP TABLE caught (kind TEXT PRIMARY KEY, n INTEGER)")
    for event, row, step in (("INSERT", "new", 1), ("DELETE", "old", -1)):
        conn.execute(
            f"CREATE TEMP TRIGGER caught_{event.lower()} AFTER {event} ON main.sources BEGIN "
            f"INSERT INTO caught VALUES ({row}.kind, {step}) "
            f"ON CONFLICT(kind) DO UPDATE SET n = n + {step}; END"
        )  # noqa: S608 (fixed text: no value of anyone's goes into it)
