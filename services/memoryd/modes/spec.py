"""The spec's recall, untouched: the spec's bm25 query over hits, its top k found without
scoring every row (topk.py), each hit with its source and a snippet cut without loading the whole
text (textcut.py). Its index holds the spec's tables only."""

import sqlite3
from functools import partial

from memoryd.modes.registry import Mode
from memoryd.search import topk
from memoryd.search.hit import Hit, from_source
from memoryd.search.query import Query
from memoryd.search.textcut import hit_snippet

# A hit's source.
SOURCE = "SELECT kind, session, record, time, role, class, untrusted FROM sources WHERE rowid = ?"


def search(conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
    """At most k hits for the query, best first (bm25); none for a query without any term.

    All in one read transaction so that a commit in between cannot mix two states of the index.
    """
    if query.expression is None:
        return []
    conn.execute("BEGIN")
    try:
        hits = []
        for rowid in topk.best_rowids(conn, query.terms, query.expression, k):
            source = conn.execute(SOURCE, (rowid,)).fetchone()
            if source is None:
                continue
            found = from_source(conn, rowid, source, partial(hit_snippet, conn, rowid, query.terms))
            if found is not None:
                hits.append(found)
        return hits
    finally:
        conn.execute("COMMIT")


class Spec(Mode):
    name = "spec"

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        return search(conn, query, k)
