"""The row counts of the index's common terms, taken in one pass once memoryd has caught up (and
after a reindex), so that the recalls after a start do not count them one by one.

bm25's idf needs the rows holding each term of a question, and FTS5 keeps no such count: the
first recall that needs one reads the term's whole list, 10 to 35 ms for a common term at a
million records, and a question of common words pays it for each (recall keeps the counts per
index state, search/vocab.py and modes/contextrank.py, so only the first time). One pass of
fts5vocab over a table reads every list once (about 2 s for both tables at a million records):
the terms held by at least generation.STORE_ABOVE rows, a few hundred, are kept in the counts of
the state the pass read. The spec's are carried into the states after it as rows are added
(vocab.py); context's last until the next commit changes its table, as its own counts do.
"""

import sqlite3
import time

from memoryd.modes import contextrank
from memoryd.search import generation, vocab

HAS_TABLE = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"


def warm(conn: sqlite3.Connection) -> tuple[int, int, float]:
    """(spec terms, context tokens) counted in one read transaction of conn, and the seconds it
    took. Raises sqlite3.Error as the reads do (conn.interrupt() included)."""
    started = time.monotonic()
    conn.execute("BEGIN")
    try:
        spec = vocab.warm(conn, generation.STORE_ABOVE)
        (has_context,) = conn.execute(HAS_TABLE, (contextrank.TABLE,)).fetchone()
        context = contextrank.warm(conn, generation.STORE_ABOVE) if has_context else 0
    finally:
        conn.execute("ROLLBACK")  # a read: nothing to commit, and no commit to trace among writes
    return spec, context, time.monotonic() - started
