"""The hybrid mode's tables: one vector per row, and the rows still waiting for theirs.

vectors holds each row's embedding (384 int8, int8.pack; float32 from an older memoryd is
read too) once the background embedder has computed it; vector_pending the rowids added since,
which recall finds lexically meanwhile. recall_mode.generation rises when a delete takes the
highest rowid, after which SQLite gives a new row a rowid that was used before (below vectors
already read): the exact matrix and the ANN then read the table again rather than only what lies
above what they hold. Other deletes leave it: the exact matrix drops deleted rows when the file's
count of deletions rises (vectors.py), and the ANN's candidates are read back from the table
(vectors.around), so a deleted row's vector scores nothing either way.
"""

import sqlite3

SCHEMA = (
    "CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, vector BLOB)",
    "CREATE TABLE vector_pending (rowid INTEGER PRIMARY KEY)",
)
DROP = ("DROP TABLE IF EXISTS vectors", "DROP TABLE IF EXISTS vector_pending")
# recall_mode.generation as its readers take it, and the statement that raises it: a value
# edited by hand (text, NULL, no row) reads as 0 and is an integer again at the next raise.
GENERATION = "coalesce((SELECT CAST(generation AS INTEGER) FROM recall_mode), 0)"
RAISE_GENERATION = (
    "UPDATE recall_mode SET generation = coalesce(CAST(generation AS INTEGER), 0) + 1"
)
OBJECTS = ("vectors", "vector_pending")
# Beside the index file: the vectors of the index it replaced, given to its rows as the catch-up
# adds them (index/carryfile.py); the embedder waits while it is there.
CARRY_NAME = "memory.sqlite3.carry"


def create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def drop(conn: sqlite3.Connection) -> None:
    for statement in DROP:
        conn.execute(statement)


def rows_added(conn: sqlite3.Connection, rowids: list[int]) -> None:
    conn.executemany("INSERT OR IGNORE INTO vector_pending VALUES (?)", [(r,) for r in rowids])


def rows_deleted(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    (reused,) = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM sources WHERE rowid = (SELECT max(rowid) FROM sources)"
        f" AND ({where}))",  # noqa: S608
        params,
    ).fetchone()
    for table in OBJECTS:
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM sources WHERE {where})",  # noqa: S608
            params,
        )
    if reused:
        conn.execute(RAISE_GENERATION)
