"""What context_hits gained between two states in which memoryd only added rows, so that its
term counts are carried from one state to the next instead of counted afresh after every commit.

Within one lineage of the index (search/generation.py: a deletion starts a new one) memoryd only
adds rows, with rowids above every row before, and context_hits is a function of the spec's rows
(contextrows.py): the state that held the rows up to rowid `since` is context.py's table of those
rows. The next commits add rows above since, and rewrite one thing below it: the neighbour
column of the last NEIGHBOURS turns of each session that gained turns, which gains the new turns'
text (and never loses any: the column only grows). So the rows holding token t now are

    the rows that held it at since + the rows above since holding it
                                   + the rewritten rows that hold it now and did not then,

the second counted by FTS5 from a seek in t's list, the third here: each rewritten row's columns
then (rebuilt from the spec's rows up to since) and now (the table's own), tokenized by the
table's tokenizer. Past MOST_REWRITTEN rewritten rows (a catch-up of many sessions) nothing is
carried: the counts are taken afresh, as before.
"""

import sqlite3

from memoryd.modes import contextrows
from memoryd.modes.dates import date_words

# Rewritten rows tokenized to carry the counts over, at most.
MOST_REWRITTEN = 256
# The turns added since, by rowid (with DISTINCT, SQLite scans the whole session index instead:
# 67 ms at a million records, against 0.5).
ADDED_TURNS = "SELECT session FROM sources WHERE rowid > ? AND kind = 'session'"
SESSION_TURNS = (
    "SELECT s.rowid, s.time, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
    " WHERE s.session = ? AND s.kind = 'session' AND s.rowid <= ? ORDER BY s.rowid DESC LIMIT ?"
)
NOW = "SELECT c0, c1, c2 FROM context_hits_content WHERE id = ?"
INSTANCES = "SELECT DISTINCT doc, term FROM probe"
INSERT = "INSERT INTO context_hits (rowid, text, near, date) VALUES (?, ?, ?, ?)"


def gained(conn: sqlite3.Connection, since: int) -> dict[str, int] | None:
    """For each token, the rows at or below since that hold it now and did not in the state of
    the rows up to since; None when more than MOST_REWRITTEN rows were rewritten, or the file
    lacks the spec's tables (a table not made by memoryd): the counts are taken afresh then."""
    try:
        return _gained(conn, since)
    except sqlite3.OperationalError:
        return None


def _gained(conn: sqlite3.Connection, since: int) -> dict[str, int] | None:
    then: list[tuple[int, str, str, str]] = []
    now: list[tuple[int, str, str, str]] = []
    touched: dict[str, None] = {}
    for (session,) in conn.execute(ADDED_TURNS, (since,)):
        touched[session] = None
        if len(touched) > MOST_REWRITTEN:
            return None
    for session in touched:
        # The session's turns up to since, newest first: its last NEIGHBOURS were rewritten, and
        # each needs the NEIGHBOURS before it for its column as it was.
        turns = conn.execute(SESSION_TURNS, (session, since, 2 * contextrows.NEIGHBOURS)).fetchall()
        window = turns[::-1]
        for i in range(max(0, len(window) - contextrows.NEIGHBOURS), len(window)):
            rowid, time, text = window[i]
            row = conn.execute(NOW, (rowid,)).fetchone()
            if row is None:
                return None  # not a state context.py made: count afresh
            then.append((rowid, text, contextrows.near(window, i), date_words(time)))
            now.append((rowid, *row))
            if len(then) > MOST_REWRITTEN:
                return None
    held_then, held_now = _tokens(then), _tokens(now)
    out: dict[str, int] = {}
    for rowid, tokens in held_now.items():
        for token in tokens - held_then.get(rowid, set()):
            out[token] = out.get(token, 0) + 1
    return out


def _tokens(rows: list[tuple[int, str, str, str]]) -> dict[int, set[str]]:
    """Each row's tokens under context_hits' tokenizer (its probe: nothing is written to the
    index)."""
    found: dict[int, set[str]] = {}
    if not rows:
        return found
    probe = contextrows.probe()
    with probe.lock:
        probe.conn.execute("BEGIN")
        try:
            probe.conn.executemany(INSERT, rows)
            for rowid, token in probe.conn.execute(INSTANCES):
                found.setdefault(rowid, set()).add(token)
        finally:
            probe.conn.execute("ROLLBACK")
    return found
