"""How memoryd names a database file to SQLite, and reads back which file a connection is to.

A home may lie under any folder Linux allows: a space, "#", "?", "%", a newline, or bytes that are
not UTF-8 (a folder named on a Latin-1 system; Python holds them as lone surrogates). Two ways of
naming such a path to SQLite go wrong, so every module goes through this one:

- a URI (needed for mode=ro, which never creates the file) takes "#" as the start of a fragment
  and "?" as the start of parameters: built from the path as it stands, it opens another file
  outside the home, read-write and created when missing. read_only() quotes every byte of the
  path (os.fsencode, so surrogates are the bytes they stand for);
- a file name SQLite gives back (PRAGMA database_list) is decoded by sqlite3 strictly as UTF-8 and
  fails for such a path, as does a str bound to ATTACH. main_file() and attached_file() read it as
  bytes, and attach() binds the path's bytes.
"""

import os
import sqlite3
import urllib.parse

# The file a schema of the connection is to, as SQLite holds it (b"" in memory or a temp file).
_FILE = "SELECT CAST(file AS BLOB) FROM pragma_database_list WHERE name = ?"


def read_only_uri(path: str | os.PathLike[str]) -> str:
    """The SQLite URI that opens the file at path read-only, never creating it. An absolute
    path is given an empty authority ("file://" before it): a path that begins "//", which
    POSIX allows and Path keeps, would otherwise read as "file://srv/...", an authority."""
    quoted = urllib.parse.quote(os.fsencode(path))
    return f"file://{quoted}?mode=ro" if quoted.startswith("/") else f"file:{quoted}?mode=ro"


def connect_read_only(path: str | os.PathLike[str], timeout: float = 5.0) -> sqlite3.Connection:
    """A read-only connection to the existing file at path (sqlite3.Error when there is none)."""
    return sqlite3.connect(read_only_uri(path), uri=True, timeout=timeout)


def main_file(conn: sqlite3.Connection) -> bytes:
    """The file conn's main database is, as bytes: b"" for an in-memory database."""
    return attached_file(conn, "main") or b""


def attached_file(conn: sqlite3.Connection, schema: str) -> bytes | None:
    """The file attached to conn as schema, as bytes; None when nothing is attached so."""
    row = conn.execute(_FILE, (schema,)).fetchone()
    if row is None:
        return None
    return row[0] if isinstance(row[0], bytes) else b""


def attach(conn: sqlite3.Connection, path: str | os.PathLike[str], schema: str) -> None:
    """ATTACH the file at path as schema (a name of memoryd's own, never read from anywhere)."""
    conn.execute(f"ATTACH DATABASE ? AS {schema}", (os.fsencode(path),))
