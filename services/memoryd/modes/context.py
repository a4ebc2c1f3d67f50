"""The context mode's table: each record indexed with its neighbours' text and its date in words.

context_hits (rowid = the spec's sources/hits rowid) holds three columns under the porter
unicode61 tokenizer: the record's own text, the text of its neighbours (the two rows before and
the two after it in the same session, each cut to NEIGHBOUR_CHARS; the agent's own recall and
memory calls are no row's neighbours, and have none), and its date in words; runs of scripts
written without spaces (Japanese, Chinese, Thai, ...) are held as their bigrams, so a word inside
a sentence is found (unspaced.py). A query is the spec's terms less the stopwords, its runs of
those scripts as bigrams too, ranked by bm25 with the neighbour column at NEAR_WEIGHT, so
a turn that answers without naming the subject ("yes, in May") is found through the turns around
it. That ranking is fused with the spec's own (fusion.py: the spec's ranking as a part of the
score, and its five best rows kept in the top ten, arrange.keep_spec: the first two the spec is
sure of in the top five, those it is not sure of by the end of the ten), so a question answered
through words context drops is still found where the spec finds it first; the rows of the
speaker a question names are raised (addressed.py); then the agent's own recall and memory calls
go last (arrange.py; session runs are not damped here, DAMP). Hits are built from the spec's
tables: tags and labels are the spec's, snippets are of the record's own text, a long one cut
around the first word context's terms match (not the spec's: hits).

Everything here is a function of the spec's tables and of each session's row order (rowids rise
with the records of a session, in a reindex as in catch-up), so an index built incrementally and
one built by a reindex hold the same rows.
"""

import sqlite3
from collections.abc import Iterable
from functools import partial

from memoryd.modes import (
    addressed,
    arrange,
    contextrank,
    contextrows,
    fusion,
    language,
    unspaced,
)
from memoryd.modes.dates import date_words
from memoryd.modes.stopwords import without_stopwords
from memoryd.search import maxscore, ties, tokencount
from memoryd.search.hit import Hit, from_source
from memoryd.search.query import Query, terms_expression
from memoryd.search.query import query_terms as query_terms_of
from memoryd.search.textcut import hit_snippet
from proto.tools import K_MAX

SCHEMA = (
    contextrows.CREATE,
    # Finds the rows before a session's new ones without a scan of sources.
    "CREATE INDEX context_sessions ON sources(session, kind)",
)
DROP = ("DROP TABLE IF EXISTS context_hits", "DROP INDEX IF EXISTS context_sessions")
OBJECTS = ("context_hits", "context_sessions")
NEIGHBOURS = contextrows.NEIGHBOURS
NEAR_WEIGHT = 0.4
DATE_WEIGHT = 1.0
# The spec's ranking's share of the score (fusion.py), and how deep it is read (hybrid's too).
SPEC_WEIGHT = 0.15
SPEC_DEPTH = 10
# The spec's own best rows are at these positions or better (arrange.keep_spec): its five best
# in context's ten (hybrid keeps four: its dense part finds more of what the spec finds late),
# those the spec is not sure of (arrange.SURE) at the end of the ten.
KEEP_SPEC = (2, 4, 7, 9, 10)
# No damping of session runs: on the two-person shape it cost context a tenth of its gain over
# the spec at @5, and more at "all evidence in the top 5" than it won (bench/fusion_sweep.py).
DAMP = 1.0
# Lexical candidates read, the same whatever k is: the agent's own calls and a damped session
# run are passed over, so more than k are needed (4 times the most recall gives), and the rows
# of a speaker the question asks about are raised only among them (addressed.favour), so a
# depth growing with k would make the answer for k 5 other than the first five of the answer
# for k 10.
CANDIDATES = 4 * K_MAX
# context_hits as its ranking weighs it (search/topk.py scores it as FTS5 would).
LEXICAL = tokencount.Table(
    "context_hits",
    SCHEMA[0],
    ("text", "near", "date"),
    (1.0, NEAR_WEIGHT, DATE_WEIGHT),
    unspaced.spaced,
)
RANKED = (
    f"SELECT rowid, bm25(context_hits, 1.0, {NEAR_WEIGHT}, {DATE_WEIGHT}) AS score"
    " FROM context_hits WHERE context_hits MATCH ? ORDER BY score LIMIT ?"
)
# Every row of one score for the context terms, in ties.py's order (ties.spec_top).
TIED = ties.first_tied("context_hits", f"bm25(context_hits, 1.0, {NEAR_WEIGHT}, {DATE_WEIGHT})")
# A session's turns that are neighbours: every row of it but the agent's own recall and memory
# calls (arrange.own_call), which are nobody's neighbour and have none.
_TURN = f"s.kind = 'session' AND NOT {arrange.own_call_sql('s.role', 'h.text')}"
_BEFORE = (
    "SELECT s.rowid, s.time, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
    f" WHERE s.session = ? AND {_TURN} AND s.rowid < ? ORDER BY s.rowid DESC LIMIT ?"
)
_AFTER = (
    "SELECT s.rowid, s.time, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
    f" WHERE s.session = ? AND {_TURN} AND s.rowid > ? ORDER BY s.rowid LIMIT ?"
)
# A session's turns (with their text) before, between and after rowids, by its index.
_ROWIDS_BEFORE = (
    "SELECT s.rowid FROM sources s JOIN hits h ON h.rowid = s.rowid WHERE s.session = ?"
    f" AND {_TURN} AND s.rowid < ? ORDER BY s.rowid DESC LIMIT ?"
)
_ROWIDS_SPAN = (
    "SELECT s.rowid FROM sources s JOIN hits h ON h.rowid = s.rowid WHERE s.session = ?"
    f" AND {_TURN} AND s.rowid BETWEEN ? AND ? ORDER BY s.rowid"
)
_ROWIDS_AFTER = (
    "SELECT s.rowid FROM sources s JOIN hits h ON h.rowid = s.rowid WHERE s.session = ?"
    f" AND {_TURN} AND s.rowid > ? ORDER BY s.rowid LIMIT ?"
)
_HELD = "SELECT rowid FROM context_hits WHERE rowid IN ({})"
_TIME_TEXT = (
    "SELECT s.rowid, s.time, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
    " WHERE s.rowid IN ({})"
)
_HIT = (
    "SELECT s.kind, s.session, s.record, s.time, s.role, s.class, s.untrusted"
    " FROM sources s WHERE s.rowid = ?"
)


def create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def drop(conn: sqlite3.Connection) -> None:
    for statement in DROP:
        conn.execute(statement)


def rows_added(conn: sqlite3.Connection, sources: Iterable[tuple], texts: Iterable[tuple]) -> None:
    """Index rows just added to sources/hits, and rewrite the neighbour column of the rows before
    and after them in their session; the agent's own calls are nobody's neighbour, and have none
    (as a note). sources rows are (rowid, kind, session, epoch, record, time, role, ...). A
    session's new rows follow one another among its turns: at its end (a catch-up), or in the
    place of rows just deleted (a log read again puts a changed record back at its rowid)."""
    text_of = dict(texts)
    out: list[tuple[int, str, str, str]] = []
    sessions: dict[str, list[tuple[int, str, str]]] = {}
    for row in sources:
        rowid, kind, session, time, role = row[0], row[1], row[2], row[5], row[6]
        if kind == "session" and not arrange.own_call(role, text_of[rowid]):
            sessions.setdefault(session, []).append((rowid, time, text_of[rowid]))
        else:
            out.append(contextrows.row(rowid, text_of[rowid], "", date_words(time)))
    stale: list[tuple[int]] = []
    for session, new in sessions.items():
        new.sort()
        before = conn.execute(_BEFORE, (session, new[0][0], 2 * NEIGHBOURS)).fetchall()[::-1]
        after = conn.execute(_AFTER, (session, new[-1][0], 2 * NEIGHBOURS)).fetchall()
        window = before + new + after
        start = max(0, len(before) - NEIGHBOURS)
        # The turns after them that have a row already (a build from the rows fills them later).
        later = [rowid for rowid, _, _ in after[:NEIGHBOURS]]
        marks = ",".join("?" * len(later))
        held = {r for (r,) in conn.execute(_HELD.format(marks), later)} if later else set()
        stale.extend((window[i][0],) for i in range(start, len(before)))
        stale.extend((rowid,) for rowid in later if rowid in held)
        for i in range(start, len(window)):
            rowid, time, text = window[i]
            if i >= len(before) + len(new) and rowid not in held:
                continue
            out.append(contextrows.row(rowid, text, contextrows.near(window, i), date_words(time)))
    conn.executemany("DELETE FROM context_hits WHERE rowid = ?", stale)
    conn.executemany("INSERT INTO context_hits (rowid, text, near, date) VALUES (?, ?, ?, ?)", out)


def rows_deleted(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    """Drop the rows that the spec's tables are about to lose (where: the indexer's own clause
    over sources, never built from input), and write again the neighbour column of the turns
    around them, without their text: a forgotten turn must leave no copy in its neighbours' rows,
    nor be found through them. The rows written are those a build from the remaining rows gives.
    """
    gone = conn.execute(
        f"SELECT session, rowid FROM sources WHERE kind = 'session' AND ({where})"  # noqa: S608
        " ORDER BY session, rowid",
        params,
    ).fetchall()
    conn.execute(
        f"DELETE FROM context_hits WHERE rowid IN (SELECT rowid FROM sources WHERE {where})",  # noqa: S608
        params,
    )
    sessions: dict[str, list[int]] = {}
    for session, rowid in gone:
        sessions.setdefault(session, []).append(rowid)
    out: list[tuple[int, str, str, str]] = []
    for session, deleted in sessions.items():
        out += _around_deleted(conn, session, deleted)
    conn.executemany("DELETE FROM context_hits WHERE rowid = ?", [(row[0],) for row in out])
    conn.executemany("INSERT INTO context_hits (rowid, text, near, date) VALUES (?, ?, ?, ?)", out)


def _around_deleted(
    conn: sqlite3.Connection, session: str, deleted: list[int]
) -> list[tuple[int, str, str, str]]:
    """The context rows, written again, of the session's turns that had one of deleted (its
    rowids, rising) among their neighbours; each with the turns that remain around it. Reads the
    session's turns from the first deleted to the last (its index), and 2 x NEIGHBOURS on each
    side: enough for the windows of the NEIGHBOURS turns on each side of a deleted one."""
    reach = 2 * NEIGHBOURS
    before = [r for (r,) in conn.execute(_ROWIDS_BEFORE, (session, deleted[0], reach))][::-1]
    span = [r for (r,) in conn.execute(_ROWIDS_SPAN, (session, deleted[0], deleted[-1]))]
    after = [r for (r,) in conn.execute(_ROWIDS_AFTER, (session, deleted[-1], reach))]
    order, dropped = before + span + after, set(deleted)
    touched: set[int] = set()
    for i, rowid in enumerate(order):
        if rowid in dropped:
            touched.update(order[max(0, i - NEIGHBOURS) : i + NEIGHBOURS + 1])
    touched -= dropped
    if not touched:
        return []
    remaining = [rowid for rowid in order if rowid not in dropped]
    windows = {}
    for i, rowid in enumerate(remaining):
        if rowid in touched:
            lo = max(0, i - NEIGHBOURS)
            windows[rowid] = (remaining[lo : i + NEIGHBOURS + 1], i - lo)
    wanted = sorted({r for rows, _ in windows.values() for r in rows})
    rows: dict[int, tuple[str, str]] = {}
    for start in range(0, len(wanted), 900):  # SQLite's bound parameters
        part = wanted[start : start + 900]
        marks = ",".join("?" * len(part))
        found = conn.execute(_TIME_TEXT.format(marks), part)
        rows.update((rowid, (time, text)) for rowid, time, text in found)
    out = []
    for rowid, (around, at) in sorted(windows.items()):
        window = [(r, *rows[r]) for r in around]
        near = contextrows.near(window, at)
        out.append(contextrows.row(rowid, window[at][2], near, date_words(window[at][1])))
    return out


def query_terms(query: Query) -> list[str]:
    """The context query's terms: the query's own (split once, by recall) less the stopwords,
    its runs of scripts written without spaces split into the bigrams the table holds
    (unspaced.py)."""
    spaced = unspaced.query_text(query.text)
    return without_stopwords(query.terms if spaced is query.text else query_terms_of(spaced))


def ranked(
    conn: sqlite3.Connection, terms: list[str], limit: int, budget: int | None = None
) -> list[tuple[int, float]]:
    """(rowid, bm25) of the best limit rows for the context terms (query_terms), best first (bm25
    is negative: lower is better), equal scores in ties.py's order; with a budget, perhaps
    approximate (search/budgeted.py)."""
    expression = terms_expression(terms)
    if expression is None or limit < 1:
        return []
    state = contextrank.counts(conn)
    if budget is not None:
        found = contextrank.within(conn, terms, limit, LEXICAL, budget, state)
        if found is not None:
            return found
    return _exact(conn, terms, expression, limit, state)


def _exact(
    conn: sqlite3.Connection,
    terms: list[str],
    expression: str,
    limit: int,
    state: contextrank.Counts,
) -> list[tuple[int, float]]:
    """The best limit rows, equal scores in ties.py's order (ties.spec_top, as the spec's ranking
    does): FTS5 leaves them by rowid, which a rebuild gives out in another order than the live
    index, so a run of equal scores cut at limit would keep other rows after a reindex, and the
    live index the oldest saying the same words. contextrank is asked one row more (more would
    lower the score it proves its rows by), the plain query ties.MORE more."""

    def best(n: int) -> list[tuple[int, float]]:
        found = contextrank.exact(conn, terms, n, LEXICAL, state)
        return conn.execute(RANKED, (expression, n)).fetchall() if found is None else found

    asked = limit + 1
    found = contextrank.exact(conn, terms, asked, LEXICAL, state)
    if found is None:
        asked = limit + ties.MORE
        found = conn.execute(RANKED, (expression, asked)).fetchall()
    return ties.spec_top(conn, expression, found, limit, asked, best, TIED)


def hits(conn: sqlite3.Connection, rowids: Iterable[int], terms: list[str]) -> list[Hit]:
    """The hits of rowids in that order, as the spec renders them (snippet of the record's own
    text around the first of the context terms)."""
    found = []
    for rowid in rowids:
        row = conn.execute(_HIT, (rowid,)).fetchone()
        if row is None:
            continue
        # The snippet is never the whole of a long text (textcut.py).
        hit = from_source(conn, rowid, row, partial(hit_snippet, conn, rowid, terms, LEXICAL))
        if hit is not None:
            found.append(hit)
    return found


def spec_ranked(
    conn: sqlite3.Connection, query: Query, limit: int, budget: int | None = None
) -> arrange.SpecRanking:
    """The spec's own ranking of the query (every word kept), best first, with the rows it is
    sure of (arrange.sure): fusion.py's spec part and keep_spec's rows, read once per recall;
    with a budget, perhaps approximate (search/budgeted.py). Runs inside the caller's read
    transaction."""
    if query.expression is None:
        return arrange.SpecRanking()
    # The spec's rows with their scores, without scoring every row holding a term when it can.
    found = maxscore.spec_ranked(conn, query.terms, query.expression, limit, budget)
    rowids = [rowid for rowid, _bm25 in found]
    scores = [-bm25 for _rowid, bm25 in found]  # arrange.sure's: -bm25, higher is better
    return arrange.SpecRanking(rowids, arrange.sure(conn, query.expression, rowids, limit, scores))


def keep(
    order: list[int],
    spec: arrange.SpecRanking,
    where: dict[int, arrange.Place],
    query: Query,
    deadlines: tuple[int, ...],
    k: int,
) -> list[int]:
    """arrange.keep_spec with deadlines for a question in English (or any the guess doubts);
    for one in another language, whose stopwords are dropped but whose person and stems are not
    read, the spec's first rows held in the top five, sure of them or not (arrange.UNREAD)."""
    if language.guess(query.terms) == language.ENGLISH:
        return arrange.keep_spec(order, spec, where, deadlines, k)
    return arrange.keep_spec(order, spec, where, arrange.unread(deadlines), k, frozenset(spec))


def search(
    conn: sqlite3.Connection, query: Query, k: int, speakers: addressed.Speakers | None = None
) -> list[Hit]:
    """context's recall: its lexical ranking and the spec's, fused (fusion.py), the named
    speaker's rows raised (addressed.py; speakers keeps what was read of each name), then
    arranged (arrange.py: the agent's own calls last, the spec's best rows kept), all in one
    read transaction."""
    terms = query_terms(query)
    conn.execute("BEGIN")
    try:
        combined: dict[int, float] = {}
        fusion.add_lexical(combined, ranked(conn, terms, CANDIDATES), 1.0 - SPEC_WEIGHT, 0.0)
        spec = spec_ranked(conn, query, SPEC_DEPTH)
        fusion.add_spec(combined, spec, SPEC_WEIGHT)
        where = arrange.places(conn, combined)
        asked = addressed.asked_role(conn, query.text, speakers)
        if asked is not None:
            addressed.favour(combined, where, asked)
        order = arrange.arrange(combined, where, k, DAMP)
        order = keep(order, spec, where, query, KEEP_SPEC, k)
        return hits(conn, order, terms)
    finally:
        conn.execute("COMMIT")
