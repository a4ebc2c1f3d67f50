"""The most bm25 a row of context_hits could score for a query: hybrid's lexical yardstick.

hybrid (hybrid.py) adds a lexical and a dense score. Dividing bm25 by the query's best row says
only how a row ranks among the lexical hits, so the best of them scores 1 even when all it shares
with the question is a name, and a turn that answers in other words (found by the model alone)
cannot pass it. Dividing by the most the query's phrases could add, sum of idf(t) x (k1 + 1)
(bm25.py), says how much of the query's weight a row holds: a row holding only a common name
scores little, one holding the question's rare words scores much.

idf needs n(t), the rows holding t, which FTS5 counts by reading the term's whole list (a few ms
for a term in half of 100,000 rows). n(t) and N are those of the table's state the question is
asked in, never counts kept from an earlier state: the bound scales the lexical half against the
dense one, and which names the dense half leaves out (names.py) turns on n(t), so counts kept
until the table had drifted a few percent ranked the same question over the same memory one way
in a memoryd running for weeks and another after a restart. A term of one token is counted by
context's ranking (contextrank.py), per state of context_hits, which has usually just counted it
for the same question, or counted it ahead (index/warmcounts.py). A term of several tokens (rare:
a letter newer than this SQLite's Unicode tables splits a word) is counted by FTS5 as a phrase
and kept for that state alone (kept.py). N is that state's too.
"""

import sqlite3
from collections.abc import Sequence

from memoryd.modes import contextrank, contextrows
from memoryd.modes.kept import Kept
from memoryd.search import bm25

COUNT = "SELECT count(*) FROM context_hits WHERE context_hits MATCH ?"
# Phrases kept, at most (the least recently used go first).
MAX_TERMS = 20_000


class TermCounts:
    """n(t) for context_hits in the state a query reads; one per index, shared by its reader
    threads."""

    def __init__(self) -> None:
        self._phrases: Kept[int] = Kept(MAX_TERMS)

    def clear(self) -> None:
        self._phrases.clear()

    def bound(self, conn: sqlite3.Connection, terms: Sequence[str]) -> float:
        """Sum over terms (the context query's phrases, as matched) of idf x (k1 + 1); 0.0 for
        an empty table or no terms."""
        state = contextrank.counts(conn)
        if state.rows == 0:
            return 0.0
        return sum(bm25.idf(state.rows, self._docs(conn, state, term)) for term in terms) * (
            bm25.PHRASE_BOUND
        )

    def share(self, conn: sqlite3.Connection, term: str) -> tuple[int, int]:
        """(rows holding term, rows in the table): how common a word is (names.py)."""
        state = contextrank.counts(conn)
        return (self._docs(conn, state, term) if state.rows else 0), state.rows

    def _docs(self, conn: sqlite3.Connection, state: contextrank.Counts, term: str) -> int:
        """The rows holding term: context's count in the table's state when it is one token,
        else FTS5's count of the rows holding its phrase, kept for this state (a state memoryd
        did not make has no key: counted each time)."""
        tokens = contextrows.probe().tokens(term)
        if len(tokens) == 1:
            found = state.docs(conn, tokens[0], term)
        else:
            count = lambda: conn.execute(COUNT, (f'"{term}"',)).fetchone()[0]  # noqa: E731
            found = self._phrases.get(term, state.key, count)
        # Never more than the table's rows (an index edited by hand): idf is then its floor
        # rather than the logarithm of a negative number.
        return min(state.rows, found)
