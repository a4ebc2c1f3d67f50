"""The tables of a recall mode marked to be built again from the index's own rows.

A format step that changed only what a mode derives from the spec's rows (index/formatstep.py)
keeps the index: it marks those tables here, in the transaction that raises the index's stamp,
and the next prepare (modes.prepare, deferred until memoryd listens) builds them again from the
rows, removing the mark in the same transaction. A stop or a kill during that build rolls it back
with the mark still there, so the next start builds them again; until they are built, recall
answers by the spec's search and says why (index/modeprep.py). A table of its own rather than a
row of settings: the settings table is the index's stamp, and a row more there is another stamp.
"""

import sqlite3
from collections.abc import Iterable

TABLE = "mode_stale"
CREATE = "CREATE TABLE IF NOT EXISTS mode_stale (name TEXT PRIMARY KEY, why TEXT)"
DROP = "DROP TABLE IF EXISTS mode_stale"


def held(conn: sqlite3.Connection) -> bool:
    """Whether the index holds the mark (even an empty one: the mode is then built whole)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone()
    return found is not None


def mark(conn: sqlite3.Connection, names: Iterable[str], why: str) -> None:
    """Mark the tables named to be built again from the rows, and why (caller's transaction)."""
    conn.execute(CREATE)
    conn.executemany(
        "INSERT OR REPLACE INTO mode_stale VALUES (?, ?)", [(name, why) for name in sorted(names)]
    )


def marked(conn: sqlite3.Connection) -> dict[str, str]:
    """The tables marked, each with why; empty when there is no mark."""
    if not held(conn):
        return {}
    return {str(name): str(why) for name, why in conn.execute("SELECT name, why FROM mode_stale")}


def said(marks: dict[str, str]) -> str:
    """The tables marked and why, in words: 'context_hits (index format 5 holds ...)'."""
    whys = "; ".join(sorted(set(marks.values())))
    return f"{', '.join(sorted(marks))} ({whys})"
