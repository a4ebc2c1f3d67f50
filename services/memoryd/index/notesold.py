"""The rows of an earlier reading of notes.md, deleted a batch at a time before it is read again.

notes.md changed other than by an append is read again from its start. Its earlier reading's rows
go first, a batch at a time within a part's bounds (notesparts.py), so that the writer is free
between two batches. notes.md's progress row says so meanwhile (its tail is OLD_ROWS and the
highest rowid deleted), so that a stop in between goes on deleting at the next catch-up: no row
of the earlier reading is left beside the new ones.
"""

import sqlite3
from collections.abc import Callable

from memoryd.index import indexer
from memoryd.index.sessionrows import LogState

NOTE_ROWS = "kind IN ('noted', 'moved', 'dropped')"
# The tail of notes.md's progress while the rows of the earlier reading are deleted, followed by
# the highest rowid deleted so far (no space: indexer.save_state keeps the file read after one).
OLD_ROWS = "old-rows-after:"


def again() -> LogState:
    """notes.md's progress when it is to be read again from its start: the earlier reading's
    rows are deleted first (none yet)."""
    return LogState(tail=f"{OLD_ROWS}0")


def deleting(state: LogState) -> bool:
    return state.tail.startswith(OLD_ROWS)


def delete_old(
    conn: sqlite3.Connection, state: LogState, over: Callable[[int], bool], batch: int
) -> bool:
    """Delete the earlier reading's rows, batch rows at a time, until over (given the rows deleted)
    says the part has done what it may; True when none is left (state's tail says how far it got
    otherwise)."""
    after = int(state.tail.removeprefix(OLD_ROWS) or 0)
    deleted = 0
    while True:
        (last,) = conn.execute(
            f"SELECT max(rowid) FROM (SELECT rowid FROM sources WHERE {NOTE_ROWS}"  # noqa: S608
            " AND rowid > ? ORDER BY rowid LIMIT ?)",
            (after, batch),
        ).fetchone()
        if last is None:
            return True
        before = conn.total_changes
        indexer._delete_rows(conn, f"{NOTE_ROWS} AND rowid > ? AND rowid <= ?", (after, last))
        deleted += conn.total_changes - before
        after = last
        state.tail = f"{OLD_ROWS}{after}"
        if over(deleted):
            return False
