"""A forget's delete of index rows, in slices that each give the writer back.

A text 40,000 records hold made one delete of 40,000 rows (and their context rows, the recall
modes' rows and each row's terms in the full-text index), every freed page zeroed (secure_delete):
one writer job of seconds, which every session's write and recall waited for, unsaid. So the
forget deletes rows a slice at a time, each slice a transaction of at most SLICE_SECONDS, and
the slices after the first each a writer job of its own (ftsmerge.merge_owed runs them before
the merge, and the forget's answer waits for both), so that other writes run between them.

Meanwhile nothing forgotten is recalled: the forget lists its keys in forgotten.jsonl before it
deletes a row, and recall leaves the listed keys out (recaller._not_forgotten). A slice deletes
only rows still of a key the forget takes (a rowid freed and taken again by another row between
two slices stays). A kill between two slices leaves the forget's record (unfinished.py): every
command that could bring its text back is refused until the forget is run again, and that run
finds the rows left and deletes them. The WAL is checkpointed and truncated once, after the last.
"""

import json
import sqlite3
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryd.data import matching
from memoryd.index import indexer
from memoryd.journal import forgotten

NOTE_KINDS = "kind IN ('noted', 'moved', 'dropped')"


def condition(key: str) -> tuple[str, tuple]:
    """The rows of sources that key (note:N, session:ID:N) names, as a WHERE clause."""
    kind, _, rest = key.partition(":")
    if kind == "note":
        return f"{NOTE_KINDS} AND record = ?", (int(rest),)
    session, _, record = rest.rpartition(":")
    return "kind = 'session' AND session = ? AND record = ?", (session, int(record))


SLICE_SECONDS = 0.25  # how long one slice may hold the writer
CHUNK_ROWS = 250  # rowids deleted by one statement within a slice
BY_ROWID = "rowid IN (SELECT value FROM json_each(?))"


@dataclass
class _Left:
    rowids: list[int]  # not yet deleted, in order
    keys: dict[int, str]  # the key each was a row of when it was found
    looked: set[str]  # the keys whose rows were looked for by their keys instead


_left: "weakref.WeakKeyDictionary[Any, _Left]" = weakref.WeakKeyDictionary()


def key_of(kind: str, session: str | None, record: int) -> str | None:
    """The key (note:N, session:ID:N) a row of sources is of."""
    if kind in matching.NOTE_KINDS:
        return f"note:{record}"
    if kind == "session":
        return f"session:{session}:{record}"
    return None


def delete(index, conn: sqlite3.Connection, rows: dict[int, str]) -> None:
    """Within the caller's transaction (on the writer), delete rows (rowid: the key it was found a
    row of, on a reader before) for at most SLICE_SECONDS; what is left is deleted by finish(),
    a writer job a slice. A rowid no longer of its key (its row deleted and the key's rows added
    again since) has its key's rows looked for, with the chunk's others, in one delete."""
    left = _Left(sorted(rows), rows, set())
    _delete_for_a_while(conn, left)
    if left.rowids:
        _left[index] = left
    else:
        _left.pop(index, None)


def left(index) -> int:
    """How many rowids are still to delete."""
    found = _left.get(index)
    return len(found.rowids) if found is not None else 0


def finish(index, on_writer: Callable[..., Any]) -> None:
    """Delete what is left, a slice per on_writer job (on_writer(fn, *args) runs fn on the
    writer thread); the WAL is checkpointed and truncated after the last."""
    while on_writer(_slice, index):
        pass


def _slice(index) -> bool:
    """One slice (on the writer); whether more is left."""
    left = _left.get(index)
    if left is None:
        return False
    conn: sqlite3.Connection = index._write()
    conn.execute("PRAGMA secure_delete = ON")
    with index._transaction(conn):
        _delete_for_a_while(conn, left)
    if left.rowids:
        return True
    _left.pop(index, None)
    index.wal_owed.truncate(conn)  # the old pages' images leave the WAL (index/walowed.py)
    return False


def _delete_for_a_while(conn: sqlite3.Connection, left: _Left) -> None:
    started = time.monotonic()
    while left.rowids:
        chunk, left.rowids = left.rowids[:CHUNK_ROWS], left.rowids[CHUNK_ROWS:]
        sql = f"SELECT rowid, kind, session, record FROM sources WHERE {BY_ROWID}"  # noqa: S608
        found = {row[0]: key_of(*row[1:]) for row in conn.execute(sql, (json.dumps(chunk),))}
        held = [rowid for rowid in chunk if found.get(rowid) == left.keys[rowid]]
        if held:
            indexer._delete_rows(conn, BY_ROWID, (json.dumps(held),))
        # one delete for all the chunk's keys a rowid left (a scan of sources, not one a key)
        missed = {left.keys[rowid] for rowid in chunk if rowid not in held} - left.looked
        listed = forgotten.condition(missed)
        if listed is not None:
            left.looked |= missed
            indexer._delete_rows(conn, *listed)
        if time.monotonic() - started >= SLICE_SECONDS:
            return
