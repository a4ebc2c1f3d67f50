"""A session log read again from its start, put in place of its old reading in one transaction.

A log that is another file now (sed -i, an editor's save), or was changed before the byte the index
read, is read again from its start a part at a time, so that the writer is free between parts
(indexer.py). Were its rows deleted at the first part and added back part by part, a recall
meanwhile would find nothing of records the log holds, and say nothing of it. So the index keeps
the old rows until the last part, whose transaction puts the new reading in place (swap): recall
sees the old log or the new, never neither.

Each part pairs the rows it reads with the old rows, in order (pair), and stages, in temporary
tables of the writer's connection, only what differs: a row whose text, time and role are
unchanged stays (its record number and label updated if they moved), keeping its rowid, its
context row and its vector (hybrid); a row whose text changed is put back at the rowid of the old
row it pairs with, so that a session's rowids still rise with its records (context's neighbours
follow that order); old rows a new row skips (lines cut out of the log) are deleted, and so are
those left once the log is read. A new row with no old row left to pair with, or put into the log
before old rows (no rowid lies between for it), is added at a new rowid, after every other row,
and so is every row after it, the old ones from there deleted; those take the vector a deleted row
of the same text had (a vector depends on its text alone). So a one-record redaction of a long log
costs the swap one row, and the pairing is paid a part at a time; a line put in near the start of
a long log costs the swap the rest of the log.

The staging lives as long as the writer's connection: a restart, or a reindex's swap, reads the
log again from its start.
"""

import sqlite3
from collections.abc import Callable, Iterable

from memoryd.index.sessionrows import LogState, Row

# How many old rows past its partner a new row is looked for (lines cut out of the log).
LOOKAHEAD = 64
# The verdicts staged for the swap.
UPDATE, REPLACE, DELETE, ADD = "update", "replace", "delete", "add"

_CREATE = (
    "CREATE TEMP TABLE IF NOT EXISTS reread_rows (session TEXT, seq INTEGER, verdict TEXT,"
    " target INTEGER, epoch INTEGER, record INTEGER, time TEXT, role TEXT, class TEXT,"
    " untrusted INTEGER, text TEXT, PRIMARY KEY (session, seq))",
    "CREATE TEMP TABLE IF NOT EXISTS reread_state (session TEXT PRIMARY KEY, records INTEGER,"
    " bytes INTEGER, class TEXT, untrusted INTEGER, tail TEXT, file TEXT, cursor INTEGER,"
    " adding INTEGER)",
)
_EXISTS = "SELECT 1 FROM temp.sqlite_master WHERE name = 'reread_state'"
# The old rows of a session after a rowid, in order, with their text. CROSS JOIN keeps sources
# the outer loop, walked by rowid from the cursor: left to itself the planner reads every text of
# hits (the full-text table) and sorts, at each look (about 1 s at 750,000 rows, twice a log).
_OLD = (
    "SELECT s.rowid, s.epoch, s.record, s.time, s.role, s.class, s.untrusted, h.text"
    " FROM sources s CROSS JOIN hits h ON h.rowid = s.rowid"
    " WHERE s.kind = 'session' AND s.session = ? AND s.rowid > ? ORDER BY s.rowid LIMIT ?"
)
_STAGED = (
    "SELECT verdict, target, epoch, record, time, role, class, untrusted, text"
    " FROM temp.reread_rows WHERE session = ? ORDER BY seq"
)


class Reading:
    """A reading again under way: how far the log is read (state), the last old rowid paired
    (cursor), and whether every row from here on is added anew (adding)."""

    def __init__(self, state: LogState, cursor: int = 0, adding: bool = False):
        self.state, self.cursor, self.adding = state, cursor, adding


def _tables(conn: sqlite3.Connection) -> None:
    for statement in _CREATE:
        conn.execute(statement)


def under_way(conn: sqlite3.Connection, session: str) -> Reading | None:
    """The reading again of session's log under way, or None."""
    if conn.execute(_EXISTS).fetchone() is None:
        return None
    row = conn.execute(
        "SELECT records, bytes, class, untrusted, tail, file, cursor, adding"
        " FROM temp.reread_state WHERE session = ?",
        (session,),
    ).fetchone()
    if row is None:
        return None
    state = LogState(row[0], row[1], row[2], bool(row[3]), row[4], row[5])
    return Reading(state, int(row[6]), bool(row[7]))


def begin(conn: sqlite3.Connection, session: str, state: LogState) -> Reading:
    """Start reading session's log again from state (its start), dropping what an earlier
    reading again of it had staged."""
    end(conn, session)
    reading = Reading(state)
    keep(conn, session, reading)
    return reading


def keep(conn: sqlite3.Connection, session: str, reading: Reading) -> None:
    """Note how far the reading again has come, in the caller's transaction."""
    _tables(conn)
    state = reading.state
    conn.execute(
        "INSERT OR REPLACE INTO temp.reread_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session,
            state.records,
            state.bytes,
            state.klass,
            int(state.untrusted),
            state.tail,
            state.file,
            reading.cursor,
            int(reading.adding),
        ),
    )


def end(conn: sqlite3.Connection, session: str) -> None:
    """Drop what is staged for session's log."""
    if conn.execute(_EXISTS).fetchone() is not None:
        conn.execute("DELETE FROM temp.reread_rows WHERE session = ?", (session,))
        conn.execute("DELETE FROM temp.reread_state WHERE session = ?", (session,))


def _same(old: tuple, new: Row) -> bool:
    """Whether an old row (rowid, epoch, record, time, role, class, untrusted, text) may stay for
    a new one: the same text, time and role (what its context row and vector depend on)."""
    return old[7] == new[8] and old[3] == new[4] and old[4] == new[5]


class _Old:
    """The session's old rows after the cursor, read ahead as the pairing needs them."""

    def __init__(self, conn: sqlite3.Connection, session: str, cursor: int, want: int):
        self.conn, self.session = conn, session
        self.rows: list[tuple] = []
        self.at = 0
        self.last = cursor  # the highest rowid read
        self.more = True
        self.want = want

    def ahead(self, n: int) -> list[tuple]:
        """The next n old rows not yet paired (fewer at the end)."""
        while self.more and len(self.rows) - self.at < n:
            limit = max(self.want, n) + LOOKAHEAD
            got = self.conn.execute(_OLD, (self.session, self.last, limit)).fetchall()
            self.more = len(got) == limit  # fewer: none is left (no look to the end again)
            if got:
                self.rows = self.rows[self.at :] + got
                self.at = 0
                self.last = got[-1][0]
        return self.rows[self.at : self.at + n]


def pair(conn: sqlite3.Connection, session: str, reading: Reading, rows: Iterable[Row]) -> None:
    """Pair a part's rows with the old rows after reading.cursor and stage what differs."""
    _tables(conn)
    (seq,) = conn.execute(
        "SELECT coalesce(max(seq), 0) FROM temp.reread_rows WHERE session = ?", (session,)
    ).fetchone()
    rows = list(rows)
    old = _Old(conn, session, reading.cursor, len(rows))
    staged: list[tuple] = []

    def put(verdict: str, target: int | None, row: Row | None) -> None:
        nonlocal seq
        seq += 1
        fields = (None,) * 7 if row is None else row[2:]
        staged.append((session, seq, verdict, target, *fields))

    for at, row in enumerate(rows):
        if reading.adding:
            put(ADD, None, row)
            continue
        near = old.ahead(LOOKAHEAD)
        skip = next((d for d, o in enumerate(near) if _same(o, row)), None)
        if skip is None and near and _put_in(near[0], rows[at + 1 : at + 1 + LOOKAHEAD]):
            reading.adding = True  # lines put into the log: no rowid between for them
            put(ADD, None, row)
            continue
        if skip is not None:
            for gone in near[:skip]:  # lines cut out of the log
                put(DELETE, gone[0], None)
            partner = near[skip]
            if (partner[1], partner[2], partner[5], partner[6]) != (row[2], row[3], row[6], row[7]):
                put(UPDATE, partner[0], row)
            old.at += skip + 1
        elif near:
            put(REPLACE, near[0][0], row)
            old.at += 1
        else:  # no old row left: this row and every one after it go after all others
            reading.adding = True
            put(ADD, None, row)
        if old.at:
            reading.cursor = old.rows[old.at - 1][0]
    conn.executemany(
        "INSERT INTO temp.reread_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", staged
    )


def _put_in(old: tuple, coming: list[Row]) -> bool:
    """Whether the old row is among the new rows coming (those before it were put in)."""
    return any(_same(old, row) for row in coming)


def swap(
    conn: sqlite3.Connection,
    session: str,
    reading: Reading,
    kept: Callable[[Iterable[Row]], Iterable[Row]],
) -> int:
    """In the caller's transaction: put the staged reading of session's log in place of the rows
    the index holds of it; kept filters the rows written anew as the indexer filters what it
    reads (a forget made during the reading may have taken them). Returns how many rows were
    written anew."""
    from memoryd.index import indexer  # the indexer calls this module

    updated: list[tuple] = []
    replaced: list[tuple[int, Row]] = []
    gone: list[int] = []
    added: list[Row] = []
    for verdict, target, *fields in conn.execute(_STAGED, (session,)).fetchall():
        row = ("session", session, *fields)
        if verdict == UPDATE:
            updated.append((row[2], row[3], row[6], row[7], target))
        elif verdict == DELETE:
            gone.append(target)
        elif verdict == REPLACE:
            gone.append(target)
            replaced.append((target, row))
        else:
            added.append(row)
    # The old rows no new row paired with: the log is shorter now.
    gone.extend(
        r
        for (r,) in conn.execute(
            "SELECT rowid FROM sources WHERE kind = 'session' AND session = ? AND rowid > ?",
            (session, reading.cursor),
        )
    )
    if updated:
        conn.executemany(
            "UPDATE sources SET epoch = ?, record = ?, class = ?, untrusted = ? WHERE rowid = ?",
            updated,
        )
    vectors: dict[str, bytes] = {}
    if gone:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS reread_gone (rowid INTEGER PRIMARY KEY)")
        conn.execute("DELETE FROM temp.reread_gone")
        conn.executemany("INSERT OR IGNORE INTO temp.reread_gone VALUES (?)", [(r,) for r in gone])
        if added and _has_vectors(conn):
            vectors = dict(conn.execute(_GONE_VECTORS))
        indexer._delete_rows(conn, "rowid IN (SELECT rowid FROM temp.reread_gone)", ())
        conn.execute("DELETE FROM temp.reread_gone")
    allowed = {id(row) for row in kept(row for _, row in replaced)}
    written = 0
    run: list[tuple[int, Row]] = []
    for rowid, row in replaced:
        if id(row) not in allowed:
            continue
        if run and conn.execute(_KEPT_BETWEEN, (session, run[-1][0], rowid)).fetchone():
            written += _put_back(conn, run)
            run = []
        run.append((rowid, row))
    written += _put_back(conn, run)
    if added:
        (first,) = conn.execute(indexer.NEXT_AFTER).fetchone()
        written += indexer.insert_rows(conn, kept(added))
        if vectors:
            _give_vectors(conn, first + 1, vectors)
    return written


# A row of the session that stays between two rows put back (the others between them are gone).
_KEPT_BETWEEN = (
    "SELECT 1 FROM sources WHERE kind = 'session' AND session = ? AND rowid > ? AND rowid < ?"
    " LIMIT 1"
)


def _put_back(conn: sqlite3.Connection, run: list[tuple[int, Row]]) -> int:
    """Write rows at the rowids of the old rows they replace: a run with no row of the session
    between two of them, whose neighbours context writes in one go (context.rows_added)."""
    from memoryd.index import indexer

    if run:
        indexer._insert_batch(
            conn,
            [(rowid, *row[:8]) for rowid, row in run],
            [(rowid, row[8]) for rowid, row in run],
        )
    return len(run)


# The vectors of the rows the swap deletes, by text (hybrid): the rows added anew take them.
_GONE_VECTORS = (
    "SELECT h.text, v.vector FROM temp.reread_gone g JOIN vectors v ON v.rowid = g.rowid"
    " JOIN hits h ON h.rowid = g.rowid"
)


def _has_vectors(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_pending'").fetchone()
    return found is not None


def _give_vectors(conn: sqlite3.Connection, first: int, vectors: dict[str, bytes]) -> None:
    """Give the rows added from rowid first on the vector a deleted row of the same text had, and
    take them off the embedder's list. They lie above every other row: no reader has read past
    them (vectors.py)."""
    given = [
        (rowid, vectors[text])
        for rowid, text in conn.execute("SELECT rowid, text FROM hits WHERE rowid >= ?", (first,))
        if text in vectors
    ]
    conn.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", given)
    conn.executemany("DELETE FROM vector_pending WHERE rowid = ?", [(r,) for r, _ in given])
