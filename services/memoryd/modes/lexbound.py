"""The most bm25 a row of context_hits could score for a query: hybrid's lexical yardstick.

hybrid (hybrid.py) adds a lexical and a dense score. Dividing bm25 by the query's best row says
only how a row ranks among the lexical hits, so the best of them scores 1 even when all it shares
with the question is a name, and a turn that answers in other words (found by the model alone)
cannot pass it. Dividing by the most the query's phrases could add, sum of idf(t) x (k1 + 1)
(bm25.py), says how much of the query's weight a row holds: a row holding only a common name
scores little, one holding the question's rare words scores much.

idf needs n(t), the rows holding t, which FTS5 counts by reading the term's whole list (a few ms
for a term in half of 100,000 rows). The counts are kept per term and counted again once the
table's rows have changed by more than DRIFT (the bound is a scale, not a ranking, and a few
percent on n(t) moves it by less) or rows were deleted (kept.py). A term of one token is counted
by context's ranking (contextrank.py), which has usually just counted it for the same question,
or counted it ahead (index/warmcounts.py). N comes from FTS5's averages record, read on every
query.
"""

import sqlite3
from collections.abc import Sequence

from memoryd.modes import contextrank, contextrows
from memoryd.modes.kept import Kept, deletions
from memoryd.search import bm25

COUNT = "SELECT count(*) FROM context_hits WHERE context_hits MATCH ?"
AVERAGES = "SELECT block FROM context_hits_data WHERE id = ?"
# Count a term again when the table's rows moved by more than this share since it was counted.
DRIFT = 0.05
# Terms kept, at most (the least recently used go first).
MAX_TERMS = 20_000


class TermCounts:
    """n(t) for context_hits, kept across queries; one per index, shared by its reader threads."""

    def __init__(self) -> None:
        self._counts: Kept[int] = Kept(DRIFT, MAX_TERMS)

    def clear(self) -> None:
        self._counts.clear()

    def bound(self, conn: sqlite3.Connection, terms: Sequence[str]) -> float:
        """Sum over terms (the context query's phrases, as matched) of idf x (k1 + 1); 0.0 for
        an empty table or no terms."""
        row = conn.execute(AVERAGES, (bm25.AVERAGES_ID,)).fetchone()
        rows, _ = bm25.totals(row[0] if row else None)
        if rows == 0:
            return 0.0
        deleted = deletions(conn)
        return sum(bm25.idf(rows, self._docs(conn, term, rows, deleted)) for term in terms) * (
            bm25.PHRASE_BOUND
        )

    def share(self, conn: sqlite3.Connection, term: str) -> tuple[int, int]:
        """(rows holding term, rows in the table): how common a word is (names.py)."""
        row = conn.execute(AVERAGES, (bm25.AVERAGES_ID,)).fetchone()
        rows, _ = bm25.totals(row[0] if row else None)
        return (self._docs(conn, term, rows, deletions(conn)) if rows else 0), rows

    def _docs(self, conn: sqlite3.Connection, term: str, rows: int, deleted: int) -> int:
        # Never more than the table's rows (kept from a larger table, or an index edited by
        # hand): idf is then its floor rather than the logarithm of a negative number.
        return min(rows, self._counts.get(term, rows, lambda: _count(conn, term), deleted))


def _count(conn: sqlite3.Connection, term: str) -> int:
    """The rows holding term: context's count in the table's state when it is one token, else
    FTS5's count of the rows holding its phrase."""
    tokens = contextrows.probe().tokens(term)
    if len(tokens) == 1:
        return contextrank.counts(conn).docs(conn, tokens[0], term)
    return conn.execute(COUNT, (f'"{term}"',)).fetchone()[0]
