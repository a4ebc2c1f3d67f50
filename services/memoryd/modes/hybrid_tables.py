"""The hybrid mode's tables: one vector per row, and the rows still waiting for theirs.

vectors holds each row's normalised embedding (float32, little endian) once the background
embedder has computed it; vector_pending the rowids added since, which recall finds lexically
meanwhile. recall_mode.generation rises whenever rows are deleted, so a reader's cached matrix
knows to load again rather than append (rowids can be reused after a delete).
"""

import sqlite3

SCHEMA = (
    "CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, vector BLOB)",
    "CREATE TABLE vector_pending (rowid INTEGER PRIMARY KEY)",
)
DROP = ("DROP TABLE IF EXISTS vectors", "DROP TABLE IF EXISTS vector_pending")
OBJECTS = ("vectors", "vector_pending")


def create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def drop(conn: sqlite3.Connection) -> None:
    for statement in DROP:
        conn.execute(statement)


def rows_added(conn: sqlite3.Connection, rowids: list[int]) -> None:
    conn.executemany("INSERT OR IGNORE INTO vector_pending VALUES (?)", [(r,) for r in rowids])


def rows_deleted(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    for table in OBJECTS:
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM sources WHERE {where})",  # noqa: S608
            params,
        )
    conn.execute("UPDATE recall_mode SET generation = generation + 1")
