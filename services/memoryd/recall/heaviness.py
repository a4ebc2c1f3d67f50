"""Which recalls are heavy: told at the start of their run, from the rows holding their words.

Every session's recalls share memoryd's readers (service.py). Most cost milliseconds, but the
spec's ranking of a question of common words (a pasted paragraph: some 70 words within
tools.QUERY_MAX) scores every row holding any of them, seconds at a million records, and a
handful of those held every reader while the other sessions' recalls waited past brokerd's
timeout. So a recall is weighed on a reader before it searches, and a heavy one is handed to a
lane of its own (one thread): heavy recalls queue among themselves, and a light one always finds
a reader. Its answer is the same in either lane; only where it runs changes.

The weight is the rows the spec's search will rank, foreseen from the terms' row counts
(search/vocab.py's, kept per index state: counted ahead for the common terms, and the recall
itself reuses what is counted here): the rarer terms' rows when topk.split() finds a split
whose read rows can give k hits, every row holding a term otherwise (the plain query's). The
other modes are weighed the same way: context ranks the spec's query in full as well, and
hybrid's budgeted lists cost less than the weight says (its heavy recalls only queue where they
need not).
"""

import sqlite3
from collections.abc import Sequence

from memoryd.index.index import Index
from memoryd.search import candidates, tokencount, topk, vocab
from memoryd.search.query import Query

# A recall foreseen to rank more rows than this is heavy: at a million records FTS5 ranks a
# word held by 100,000 rows in 100 to 400 ms (search/budgeted.py), and the 70 common words of
# a pasted paragraph some millions of rows, in seconds.
HEAVY_ROWS = 100_000


class Heavy(Exception):
    """Raised on a reader before a recall searches, when its words hold too many rows: it runs
    in the heavy lane instead (service.py). rows: the rows it was foreseen to rank."""

    def __init__(self, rows: int) -> None:
        super().__init__(rows)
        self.rows = rows


def check(index: Index, query: str, k: int) -> None:
    """Heavy when the recall of query (at most k hits) is foreseen to rank more than HEAVY_ROWS
    rows; a query without any term searches nothing and is light."""
    parsed = Query.parse(query)
    if parsed.expression is None:
        return
    index.live  # noqa: B018 - refused as recall is while the index is not ready
    with index.reader() as conn:
        conn.execute("BEGIN")
        try:
            rows = rows_ranked(conn, parsed.terms, k)
        finally:
            conn.execute("ROLLBACK")
    if rows > HEAVY_ROWS:
        raise Heavy(rows)


def rows_ranked(conn: sqlite3.Connection, terms: Sequence[str], k: int) -> int:
    """The rows the spec's search of terms for k hits ranks, as its first step foresees them:
    only the read terms' rows when topk.split() reads terms holding at least k rows, every row
    holding a term otherwise. Runs inside the caller's read transaction."""
    found = candidates.prepare(conn, tokencount.SPEC, topk.spec_state, terms)
    if found is None:  # a term of several tokens, or no exact search on this SQLite
        return _plain_rows(conn, terms)
    total = found.total
    if total <= topk.PLAIN_BELOW:
        return total
    read = topk.split(found.docs, found.weight_of, total)
    if read is None:
        return total
    read_rows = sum(found.docs[token] for token in read)
    return total if read_rows < k else read_rows


def _plain_rows(conn: sqlite3.Connection, terms: Sequence[str]) -> int:
    """The rows the plain query ranks, at most: each term's rarest token's rows, summed."""
    state = topk.spec_state(conn)
    rows = 0
    for term in terms:
        tokens = vocab.tokens(term)
        if tokens:
            spelling = term if len(tokens) == 1 else None
            rows += min(state.docs(conn, token, spelling or token) for token in tokens)
    return rows
