"""Recall modes beyond the spec (design section 8): `[recall] mode` = spec | context | hybrid.

spec is the spec's recall and index, untouched: its index holds exactly the spec's tables. Another
mode adds its own tables beside them, all derived from the spec's rows, and records its name in
recall_mode; at open, an index whose recorded mode differs from the configured one has the old
mode's tables dropped and the new mode's built from the spec's rows (one log line), so a switch
never needs the session logs again and switching back to spec leaves the spec's schema exactly.

The indexer calls rows_added and rows_deleted where it changes the spec's tables; they follow the
mode recorded in the index itself, so the same code serves a reindex's new file and the live one.
"""

import logging
import os
import sqlite3
from pathlib import Path

from memoryd.journal.recallline import RecallLine
from memoryd.modes import context

log = logging.getLogger(__name__)

# memoryd runs several recalls at once on 2 cores beside other work: one BLAS and one tokenizer
# thread per call does better than threads that spin against each other (a 100,000-row
# matrix-vector product measured 15 ms single-threaded, 66 ms with the default threads, on a busy
# machine). Set here, before any module of this package imports numpy (only hybrid's do).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODES = ("spec", "context", "hybrid")
MODE_TABLE = "CREATE TABLE recall_mode (mode TEXT, generation INTEGER)"
# Rows read at a time when a mode's tables are built from the spec's.
FILL_BATCH = 5_000


def _exists(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return found is not None


def recorded(conn: sqlite3.Connection) -> str:
    """The mode the index was built for: spec when it has no recall_mode table."""
    if not _exists(conn, "recall_mode"):
        return "spec"
    row = conn.execute("SELECT mode FROM recall_mode").fetchone()
    return "?" if row is None else str(row[0])


def _objects(mode: str) -> tuple[str, ...]:
    if mode == "spec":
        return ()
    names: tuple[str, ...] = ("recall_mode", *context.OBJECTS)
    if mode == "hybrid":
        from memoryd.modes import hybrid_tables

        names += hybrid_tables.OBJECTS
    return names


def _drop_all(conn: sqlite3.Connection) -> None:
    from memoryd.modes import hybrid_tables

    hybrid_tables.drop(conn)
    context.drop(conn)
    conn.execute("DROP TABLE IF EXISTS recall_mode")


def _create(conn: sqlite3.Connection, mode: str) -> None:
    conn.execute(MODE_TABLE)
    conn.execute("INSERT INTO recall_mode VALUES (?, 0)", (mode,))
    context.create(conn)
    if mode == "hybrid":
        from memoryd.modes import hybrid_tables

        hybrid_tables.create(conn)


def _fill(conn: sqlite3.Connection) -> int:
    """Feed every row of the spec's tables to rows_added, in rowid order; returns how many."""
    last, count = 0, 0
    while True:
        rows = conn.execute(
            "SELECT s.rowid, s.kind, s.session, s.epoch, s.record, s.time, s.role, s.class,"
            " s.untrusted, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?",
            (last, FILL_BATCH),
        ).fetchall()
        if not rows:
            return count
        rows_added(conn, [row[:9] for row in rows], [(row[0], row[9]) for row in rows])
        last, count = rows[-1][0], count + len(rows)


def prepare(conn: sqlite3.Connection, mode: str, path: object = "index") -> bool:
    """Make the index's mode tables those of mode, inside the caller's transaction; True when
    they had to be (re)built."""
    if mode not in MODES:
        raise ValueError(f"not a recall mode: {mode!r}")
    was = recorded(conn)
    if was == mode and all(_exists(conn, name) for name in _objects(mode)):
        return False
    _drop_all(conn)
    if mode == "spec":
        log.info("index %s: recall mode spec (was %s): its tables dropped", path, was)
        return True
    _create(conn, mode)
    count = _fill(conn)
    log.info("index %s: recall mode %s (was %s): built from %d rows", path, mode, was, count)
    return True


def rows_added(conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]) -> None:
    """Hook: the indexer added these rows to sources and hits (same rowids)."""
    mode = recorded(conn)
    if mode == "spec" or not sources:
        return
    context.rows_added(conn, sources, texts)
    if mode == "hybrid":
        from memoryd.modes import hybrid_tables

        hybrid_tables.rows_added(conn, [row[0] for row in sources])


def rows_deleted(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    """Hook: the indexer is about to delete the sources rows matching where."""
    mode = recorded(conn)
    if mode == "spec":
        return
    context.rows_deleted(conn, where, params)
    if mode == "hybrid":
        from memoryd.modes import hybrid_tables

        hybrid_tables.rows_deleted(conn, where, params)


def carry_over(conn: sqlite3.Connection, old: Path) -> int:
    """Hook: a reindex built conn's file beside the index old; copy from old the vectors of the
    rows whose text did not change (hybrid), so the embedder computes only what is new. Runs its
    own transaction (an attached database can only be detached outside one); returns how many
    vectors were carried."""
    if recorded(conn) != "hybrid" or not old.exists():
        return 0
    conn.execute("ATTACH DATABASE ? AS old", (str(old),))
    try:
        found = conn.execute("SELECT 1 FROM old.sqlite_master WHERE name = 'vectors'").fetchone()
        if found is None:
            return 0
        conn.execute("BEGIN")
        conn.execute(
            "CREATE TEMP TABLE carried AS SELECT o.kind, o.session, o.record, o.role, oh.text,"
            " ov.vector FROM old.vectors ov JOIN old.sources o ON o.rowid = ov.rowid"
            " JOIN old.hits oh ON oh.rowid = ov.rowid"
        )
        conn.execute("CREATE INDEX temp.carried_key ON carried(session, kind, record, role)")
        before = conn.total_changes
        conn.execute(
            "INSERT INTO vectors SELECT n.rowid, c.vector FROM sources n"
            " JOIN hits nh ON nh.rowid = n.rowid JOIN carried c ON c.session = n.session"
            " AND c.kind = n.kind AND c.record = n.record AND c.role IS n.role"
            " AND c.text = nh.text"
        )
        carried = conn.total_changes - before
        conn.execute("DELETE FROM vector_pending WHERE rowid IN (SELECT rowid FROM vectors)")
        conn.execute("DROP TABLE temp.carried")
        conn.execute("COMMIT")
        return carried
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute("DETACH DATABASE old")


def tag_log_line(line: str, mode: str) -> str:
    """The recall log line with the mode that answered; spec's line is left as it is."""
    if mode == "spec":
        return line
    entry = RecallLine.model_validate_json(line)
    entry.mode = mode
    return entry.dump_line()
