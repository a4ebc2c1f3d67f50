"""The old mode's tables set aside and then removed a bounded batch at a time.

A DROP of a mode's tables in one job zeroes every page they held (secure_delete), about a minute
at a million records, the writer held throughout. So the first part of a switch renames them
aside (cheap, whatever their size) and each next part, or a forget, removes a batch of their
rows. Its bounds (the bytes a step removes, the rows it reads, FTS5's tables of rows) are the
package's tunables, given by the caller at each call.
"""

import sqlite3

from memoryd.modes import moderecord, registry, stale


def set_aside(conn: sqlite3.Connection, fts5_rows: tuple[str, ...]) -> None:
    """The first part's removal of the old mode's tables (and of a build's left unfinished),
    bounded whatever their size: each table is renamed aside (a virtual table's rows with it, the
    table itself dropped empty) for the next parts to empty (remove_some); an index on the
    spec's rows (context_sessions) is dropped. The record tables go."""
    aside = moderecord.ASIDE
    number = 1 + max((moderecord.aside_number(name) for name in moderecord.aside(conn)), default=0)
    for mode in registry.every():
        for name in mode.objects:
            kind = conn.execute(
                "SELECT type, sql FROM main.sqlite_master WHERE name = ?", (name,)
            ).fetchone()
            if kind is None:
                continue
            if kind[0] != "table":
                conn.execute(f'DROP INDEX main."{name}"')
            elif str(kind[1]).upper().startswith("CREATE VIRTUAL TABLE"):
                _virtual_aside(conn, name, f"{aside}{number}_{name}", fts5_rows)
            else:
                conn.execute(f'ALTER TABLE main."{name}" RENAME TO "{aside}{number}_{name}"')
    conn.execute("DROP TABLE IF EXISTS main.recall_mode")
    conn.execute(f"DROP TABLE IF EXISTS main.{moderecord.FILL}")
    conn.execute(stale.DROP)


def _virtual_aside(
    conn: sqlite3.Connection, name: str, aside: str, fts5_rows: tuple[str, ...]
) -> None:
    """An FTS5 table's rows renamed aside and the table dropped over empty ones (its structure
    record kept, which the DROP reads); a table that cannot be (another module) dropped whole."""
    conn.execute("SAVEPOINT aside")
    try:
        held = dict(
            conn.execute(
                "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' AND name IN"
                f" ({', '.join('?' * len(fts5_rows))})",
                tuple(f"{name}_{suffix}" for suffix in fts5_rows),
            ).fetchall()
        )
        for shadow, sql in held.items():
            conn.execute(f'ALTER TABLE main."{shadow}" RENAME TO "{aside}{shadow[len(name) :]}"')
            conn.execute(sql)
        if f"{name}_data" in held:
            conn.execute(
                f'INSERT INTO main."{name}_data" SELECT * FROM main."{aside}_data"'
                " WHERE id IN (1, 10)"
            )
        conn.execute(f'DROP TABLE main."{name}"')
    except sqlite3.Error:
        conn.execute("ROLLBACK TO aside")
        conn.execute(f'DROP TABLE main."{name}"')
    finally:
        conn.execute("RELEASE aside")


def remove_some(conn: sqlite3.Connection, budget: int, batch: int) -> bool:
    """One bounded step of the removal of the tables set aside: budget bytes of a table's rows
    (read batch rows at most) deleted (each freed page zeroed), or a table found empty (or
    without rowids, FTS5's small _idx) dropped. False when none is left."""
    for name in moderecord.aside(conn):
        sql = conn.execute("SELECT sql FROM main.sqlite_master WHERE name = ?", (name,))
        if "WITHOUT ROWID" in str(sql.fetchone()[0]).upper():
            conn.execute(f'DROP TABLE main."{name}"')
            return True
        last = _rows_worth(conn, name, budget, batch)
        if last is None:
            conn.execute(f'DROP TABLE main."{name}"')
        else:
            conn.execute(f'DELETE FROM main."{name}" WHERE rowid <= ?', (last,))  # noqa: S608
        return True
    return False


def _rows_worth(conn: sqlite3.Connection, name: str, budget: int, batch: int) -> int | None:
    """The rowid up to which the first rows of the table (batch at most) hold budget bytes (at
    least one row); None when it is empty."""
    columns = [str(row[1]) for row in conn.execute(f'PRAGMA main.table_info("{name}")')]
    size = " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in columns) or "0"
    cursor = conn.execute(
        f'SELECT rowid, {size} FROM main."{name}" ORDER BY rowid LIMIT ?',  # noqa: S608
        (batch,),
    )
    last, total = None, 0
    try:
        for rowid, length in cursor:
            last, total = rowid, total + int(length or 0)
            if total >= budget:
                break
    finally:
        cursor.close()
    return last
