"""How far the index has read each log, as its progress and offsets tables hold it (spec 6).

One row of each per log: the records read (progress) and, in offsets, the byte offset reached, the
label in force there, and in the tail column the hash of the bytes before the offset, which file
was read and, for notes.md and session logs, the digest of the bytes read (logprefix.py,
notesprefix.py). The one place that packs the tail column and unpacks it again.
"""

import sqlite3

from memoryd.index.sessionrows import LogState


def load_state(conn: sqlite3.Connection, name: str) -> LogState | None:
    row = conn.execute(
        "SELECT p.records, o.bytes, o.class, o.untrusted, o.tail FROM progress p"
        " JOIN offsets o ON o.log = p.log WHERE p.log = ?",
        (name,),
    ).fetchone()
    if row is None:
        return None
    # The file read follows the hash in the tail column (an older index has the hash alone), and
    # for notes.md the digest of the bytes read follows the file (notesprefix.py).
    tail, _, rest = str(row[4]).partition(" ")
    file, _, prefix = rest.partition(" ")
    return LogState(row[0], row[1], row[2], bool(row[3]), tail, file or None, prefix or None)


def save_state(conn: sqlite3.Connection, name: str, state: LogState) -> None:
    tail = state.tail if state.file is None else f"{state.tail} {state.file}"
    if state.file is not None and state.prefix is not None:
        tail = f"{tail} {state.prefix}"
    conn.execute("INSERT OR REPLACE INTO progress VALUES (?, ?)", (name, state.records))
    conn.execute(
        "INSERT OR REPLACE INTO offsets VALUES (?, ?, ?, ?, ?)",
        (name, state.bytes, state.klass, int(state.untrusted), tail),
    )
