"""Recall modes beyond the spec (design section 8): `[recall] mode` = spec | context | hybrid.

spec is the spec's recall and index, untouched: its index holds exactly the spec's tables. Another
mode adds its own tables beside them, all derived from the spec's rows, and records its name in
recall_mode; at open, an index whose recorded mode differs from the configured one has the old
mode's tables dropped and the new mode's built from the spec's rows (one log line), so a switch
never needs the session logs again and switching back to spec leaves the spec's schema exactly.
An index whose mode is the configured one but some of whose mode tables are marked stale (a format
step changed only them: stale.py) has those built again from the rows, its other tables kept.

Each mode is a registry.Mode, kept by name (registry.py); the functions here are what the index
and the indexer call, and they ask the mode recorded in the index itself, so the same code serves
a reindex's new file and the live one.
"""

import logging
import os
import sqlite3
from pathlib import Path

from memoryd.modes import builtin, registry, spec, stale
from proto.plural import counted

log = logging.getLogger(__name__)

# memoryd runs several recalls at once on 2 cores beside other work: one BLAS and one tokenizer
# thread per call does better than threads that spin against each other (a 100,000-row
# matrix-vector product measured 15 ms single-threaded, 66 ms with the default threads, on a busy
# machine). Set here, before any module of this package imports numpy (only hybrid's do).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

for _mode in (spec.Spec(), builtin.Context(), builtin.Hybrid()):
    registry.register(_mode)

MODES = registry.names()
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


def _recorded_mode(conn: sqlite3.Connection) -> registry.Mode | None:
    """The recorded mode, None for spec or a name no mode has (its tables are not kept)."""
    name = recorded(conn)
    if name == "spec" or name not in registry.names():
        return None
    return registry.get(name)


def _objects(mode: registry.Mode) -> tuple[str, ...]:
    return () if not mode.objects else ("recall_mode", *mode.objects)


def _drop_all(conn: sqlite3.Connection) -> None:
    for mode in registry.every():
        mode.drop(conn)
    conn.execute("DROP TABLE IF EXISTS recall_mode")
    conn.execute(stale.DROP)


def _fill(conn: sqlite3.Connection, add: registry.Fill) -> int:
    """Feed every row of the spec's tables to add (a mode's rows_added, or what fills the tables
    it renews), in rowid order; returns how many."""
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
        add(conn, [row[:9] for row in rows], [(row[0], row[9]) for row in rows])
        last, count = rows[-1][0], count + len(rows)


def prepared(conn: sqlite3.Connection, mode: str) -> bool:
    """Whether the index's mode tables are those of mode already (prepare has nothing to do)."""
    wanted = registry.get(mode)
    if stale.held(conn):
        return False
    return recorded(conn) == mode and all(_exists(conn, name) for name in _objects(wanted))


def renewing(conn: sqlite3.Connection, mode: str) -> str | None:
    """The tables prepare() builds again from the rows, keeping the mode's others, and why (in
    words, stale.said), when the index holds mode with some of its tables marked stale; None when
    prepare has nothing to do or builds the mode whole (a change of mode)."""
    marks = stale.marked(conn)
    if not marks or recorded(conn) != mode:
        return None
    return stale.said(marks)


def prepare(
    conn: sqlite3.Connection, mode: str, path: object = "index", fresh: bool = False
) -> str | None:
    """Make the index's mode tables those of mode, inside the caller's transaction; what was
    done when they had to be (re)built, for the caller to say with built() once its transaction
    has committed (a build that then fails to commit was not made), else None. fresh: the file
    was made just now (a new home, a damaged index started anew, a reindex's file), so it was
    never in another mode: the spec's schema is only where every index starts."""
    if prepared(conn, mode):
        return None
    wanted, was = registry.get(mode), recorded(conn)
    marks = stale.marked(conn)
    if was == mode and marks and all(_exists(conn, name) for name in _objects(wanted)):
        # Only the tables a format step changed: the others (hybrid's vectors) are kept.
        add = wanted.renew(conn, frozenset(marks))
        if add is not None:
            conn.execute(stale.DROP)
            count = _fill(conn, add)
            built = f"built from {counted(count, 'row')}"
            return f"index {path}: recall mode {mode}: {stale.said(marks)}: {built}"
    _drop_all(conn)
    since = "a new file" if fresh else f"was {was}"
    if not wanted.objects:
        return f"index {path}: recall mode {mode} ({since}): its tables dropped"
    conn.execute(MODE_TABLE)
    conn.execute("INSERT INTO recall_mode VALUES (?, 0)", (mode,))
    wanted.create(conn)
    count = _fill(conn, wanted.rows_added)
    return f"index {path}: recall mode {mode} ({since}): built from {counted(count, 'row')}"


def built(done: str | None) -> None:
    """Log what prepare() did, once it stands."""
    if done is not None:
        log.info("%s", done)


def rows_added(conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]) -> None:
    """Hook: the indexer added these rows to sources and hits (same rowids)."""
    mode = _recorded_mode(conn)
    if mode is not None and sources:
        mode.rows_added(conn, sources, texts)


def rows_deleted(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    """Hook: the indexer is about to delete the sources rows matching where."""
    mode = _recorded_mode(conn)
    if mode is not None:
        mode.rows_deleted(conn, where, params)


def carry_over(conn: sqlite3.Connection, old: Path) -> int:
    """Hook: a reindex built conn's file beside the index old; the mode copies from old what
    need not be computed again (hybrid: the vectors of unchanged rows). Returns how many rows."""
    mode = _recorded_mode(conn)
    return 0 if mode is None else mode.carry_over(conn, old)
