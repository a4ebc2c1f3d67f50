"""The hooks the indexer calls as it adds and deletes rows, and a reindex's carry-over.

Each asks the mode recorded in the index itself (moderecord), so that the same code serves a
reindex's new file and the live one, and keeps a build made a part at a time equal to a build in
one go: rows after the last part are left to the parts. Apart from the build, which they never
start.
"""

import sqlite3
from pathlib import Path

from memoryd.modes import moderecord, registry


def rows_added(conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]) -> None:
    """Hook: the indexer added these rows to sources and hits (same rowids)."""
    mode = moderecord.recorded_mode(conn)
    if mode is None or not sources:
        return
    if (at := moderecord.filling(conn)) is not None:  # the rows after the last part: parts feed
        sources = [row for row in sources if row[0] <= at[0]]
        texts = [row for row in texts if row[0] <= at[0]]
        if not sources:
            return
    mode.rows_added(conn, sources, texts)


def rows_deleted(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    """Hook: the indexer is about to delete the sources rows matching where."""
    mode = moderecord.recorded_mode(conn)
    if mode is not None:
        mode.rows_deleted(conn, where, params)
        if (at := moderecord.filling(conn)) is not None:
            _after_parts(conn, mode, at[0])


def _after_parts(conn: sqlite3.Connection, mode: registry.Mode, last: int) -> None:
    """Take out of the mode's tables the rows after the last part, which rows_deleted may have
    written (context writes the turns around deleted ones again, given a row or not): the next
    parts write them, once, as a build in one go would."""
    for name in mode.objects:
        kind = conn.execute("SELECT type FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        if kind is not None and kind[0] == "table":
            conn.execute(f"DELETE FROM {name} WHERE rowid > ?", (last,))  # noqa: S608


def carry_over(conn: sqlite3.Connection, old: Path) -> int:
    """Hook: a reindex built conn's file beside the index old; the mode copies from old what
    need not be computed again (hybrid: the vectors of unchanged rows). Returns how many rows."""
    mode = moderecord.recorded_mode(conn)
    return 0 if mode is None else mode.carry_over(conn, old)
