"""Taking forgotten records out of the index in use, on the writer thread.

The rows go through the indexer's own delete (so the recall modes' tables and the count of
deletions that readers watch follow), with SQLite's secure_delete on, so the freed pages are
zeroed, and the WAL is checkpointed and truncated after, so no old page image keeps the text.
FTS5's term lists keep the words (not the text) of a deleted row until a merge rewrites them:
bxctl reindex drops them (the rebuilt index skips every forgotten key).
"""

import sqlite3

from memoryd.index import indexer
from memoryd.index.sessionrows import LogState
from memoryd.memory.handedit import JournalTail

NOTE_KINDS = "kind IN ('noted', 'moved', 'dropped')"


def purge(index, keys: list[str]) -> int:
    """Delete the index rows of keys (note:N, session:ID:N); the rows deleted."""
    if not keys:
        return 0
    conn: sqlite3.Connection = index._write()
    conn.execute("PRAGMA secure_delete = ON")
    before = conn.total_changes
    with index._transaction(conn):
        for key in keys:
            kind, _, rest = key.partition(":")
            if kind == "note":
                indexer._delete_rows(conn, f"{NOTE_KINDS} AND record = ?", (int(rest),))
            elif kind == "session":
                session, _, record = rest.rpartition(":")
                indexer._delete_rows(
                    conn, "kind = 'session' AND session = ? AND record = ?", (session, int(record))
                )
    deleted = conn.total_changes - before
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        pass  # readers hold it: the next checkpoint overwrites those frames
    return deleted


def reindex_notes(index) -> int:
    """Index notes.md again from its start (its bytes were replaced whole); the rows added."""
    conn: sqlite3.Connection = index._write()
    with index._transaction(conn):
        indexer._delete_rows(conn, NOTE_KINDS, ())
        indexer.save_state(conn, indexer.NOTES_LOG, LogState())
        return indexer.index_notes(conn, index.home, index.settings)


def reset_tail(store) -> None:
    """The journal was replaced or rewritten: what the hand-edit check read of it is stale."""
    store.hand_edits.tail = JournalTail(store.journal)
