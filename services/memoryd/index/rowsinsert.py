"""Rows added to the index: sources and hits under the same rowids, in batches.

Every reading (session logs, notes.md, a reindex's build, a log read again) adds its rows here, so
that the recall modes' tables (modes.rows_added) and hybrid's vectors kept across a rebuild
(carryfile.take) follow each batch. Deleting rows stays in indexer.py (_delete_rows), where its
callers look it up.
"""

import sqlite3
from collections.abc import Iterable

from memoryd import modes
from memoryd.index import carryfile
from memoryd.index.sessionrows import Row

BATCH = 20_000

# The highest rowid in sources or hits (FTS5 finds its highest rowid without a scan).
NEXT_AFTER = (
    "SELECT max(coalesce((SELECT max(rowid) FROM sources), 0),"
    " coalesce((SELECT rowid FROM hits ORDER BY rowid DESC LIMIT 1), 0))"
)


def insert_rows(conn: sqlite3.Connection, rows: Iterable[Row]) -> int:
    """Add rows to sources and hits under the same rowids, in batches; returns how many. The new
    rowids lie above both tables' (a sources row deleted by hand leaves its hits row behind)."""
    (rowid,) = conn.execute(NEXT_AFTER).fetchone()
    first = rowid + 1
    sources: list[tuple] = []
    texts: list[tuple[int, str]] = []
    for row in rows:
        rowid += 1
        sources.append((rowid, *row[:8]))
        texts.append((rowid, row[8]))
        if len(sources) >= BATCH:
            insert_batch(conn, sources, texts)
    insert_batch(conn, sources, texts)
    return rowid + 1 - first


def insert_batch(conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]) -> None:
    if not sources:
        return
    conn.executemany("INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", sources)
    conn.executemany("INSERT INTO hits (rowid, text) VALUES (?, ?)", texts)
    modes.rows_added(conn, sources, texts)  # recall modes: their tables follow
    carryfile.take(conn, [source[0] for source in sources])  # kept vectors (hybrid)
    sources.clear()
    texts.clear()
