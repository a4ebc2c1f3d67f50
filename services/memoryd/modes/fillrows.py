"""The spec's rows read a part at a time to build a mode's tables from.

A part is bounded both in rows and in characters of text, so that a part of long records (tool
outputs) holds the writer no longer than one of short ones. The bounds are the package's tunables,
given by the caller at each call.
"""

import sqlite3


def part(conn: sqlite3.Connection, last: int, rows_cap: int, text_cap: int) -> list[tuple]:
    """The rows after rowid last, up to rows_cap of them and text_cap characters of text (at
    least one row), read one at a time so that what is not taken is not read (sources first, by
    rowid: joined the other way SQLite reads every text of hits and sorts them, each part)."""
    cursor = conn.execute(
        "SELECT s.rowid, s.kind, s.session, s.epoch, s.record, s.time, s.role, s.class,"
        " s.untrusted, h.text FROM sources s CROSS JOIN hits h ON h.rowid = s.rowid"
        " WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?",
        (last, rows_cap),
    )
    rows: list[tuple] = []
    size = 0
    try:
        for row in cursor:
            rows.append(row)
            size += len(row[9] or "")
            if size >= text_cap:
                break
    finally:
        cursor.close()
    return rows


def beyond_part(conn: sqlite3.Connection, last: int, rows_cap: int, text_cap: int) -> bool:
    """Whether more than one part (rows_cap rows, text_cap characters) lies after rowid last:
    reads the lengths of a part's rows at most."""
    cursor = conn.execute(
        "SELECT length(h.text) FROM sources s CROSS JOIN hits h ON h.rowid = s.rowid"
        " WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?",
        (last, rows_cap + 1),
    )
    count = size = 0
    try:
        for (length,) in cursor:
            if count == rows_cap or size >= text_cap:
                return True
            count += 1
            size += int(length or 0)
    finally:
        cursor.close()
    return False
