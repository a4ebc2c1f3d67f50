"""context's lexical ranking by search/maxscore.py: the same rows, order and bm25 as context's
query, without scoring every row that holds a term of the question; or, within a budget of rows
(hybrid's), by search/budgeted.py.

maxscore lets FTS5 score the rows it reads, by the whole query: exact, and at 100,000 records
cheaper in the tail than topk's exact search, whose rounds can rank and tokenize thousands of
rows on a whole-sentence question (p99 96 against 37 ms, one run alternated). budgeted.py
ranks once and scores a bounded number of rows itself, so FTS5 never ranks a common
term's rows: at a million records that is what keeps hybrid near 100 ms.

What both need of context_hits, here: its tokenizer (porter over unicode61, not the spec's), run
by an in-memory FTS5 table of the same schema; and its figures per state (Counts): n(t), the
rows holding each token, counted by fts5vocab, the average row length, and the best scores
maxscore looks up. A state is the index generation of memoryd's last commit
(search/generation.py) with context_hits' own averages and structure records, which every
change rewrites. A rewrite of a row's neighbour column (its session grew) can add a term to an
old row, so nothing is carried from one state to the next as the spec's counts are; a state
memoryd did not make is counted for each search.
"""

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from memoryd.index import dbname
from memoryd.search import bm25, budgeted, maxscore, tokencount, vocab
from memoryd.search import generation as index_generation

TABLE = "context_hits"
VOCAB_ROW = "memoryd_context_vocab"
VOCAB_DOCS = f"SELECT doc FROM temp.{VOCAB_ROW} WHERE term = ?"
FIGURES = f"SELECT id, block FROM {TABLE}_data WHERE id IN (?, ?)"
# Counts kept per state of the table, at most.
MAX_TERMS = 20_000


@dataclass
class Counts:
    """One state of context_hits: its rows, average row length (all columns), rows per token."""

    key: tuple | None
    rows: int
    avgdl: float
    known: dict[str, int] = field(default_factory=dict)
    most: dict[tuple[str, str], float] = field(default_factory=dict)  # (bm25 call, token)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def docs(self, conn: sqlite3.Connection, token: str, spelling: str) -> int:
        with self.lock:
            found = self.known.get(token)
        if found is not None:
            return found
        row = conn.execute(VOCAB_DOCS, (token,)).fetchone()
        count = 0 if row is None else row[0]
        with self.lock:
            if len(self.known) >= MAX_TERMS:
                self.known.clear()
            self.known[token] = count
        return count


_LOCK = threading.Lock()
_states: dict[bytes, Counts] = {}  # per database file: the last state seen


def ranked(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    limit: int,
    table: tokencount.Table,
    budget: int | None = None,
) -> list[tuple[int, float]] | None:
    """(rowid, bm25) of the best limit rows, best first (bm25 negative, as FTS5 gives it), as
    context's query ranks them (table: context_hits as context.py makes and weighs it); None
    when only that query can tell cheaply. With a budget, perhaps approximate (budgeted.py)."""
    state = counts(conn)
    if budget is not None:
        found = within(conn, terms, limit, table, budget, state)
        if found is not None:
            return found
    return exact(conn, terms, limit, table, state)


def within(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    limit: int,
    table: tokencount.Table,
    budget: int,
    state: Counts,
) -> list[tuple[int, float]] | None:
    """budgeted.py's answer (rowid, bm25) within budget rows, equal scores in ties.py's order
    among the rows it read; None in a table small enough for the exact ranking."""
    found = budgeted.ranked(conn, table, lambda _conn: state, terms, limit, budget)
    return None if found is None else [(rowid, -score) for rowid, score in found]


def exact(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    limit: int,
    table: tokencount.Table,
    state: Counts,
) -> list[tuple[int, float]] | None:
    """maxscore.py's answer: the rows, order (equal scores by rowid, as FTS5 leaves them) and
    bm25 of context's query; None when only that query can tell cheaply."""
    tokens = table.probe().tokens
    return maxscore.ranked(conn, TABLE, table.weights, terms, limit, tokens, state)


def warm(conn: sqlite3.Connection, above: int) -> int:
    """Count every token of context_hits held by at least `above` rows, in one pass of fts5vocab
    over its lists, into the state conn's transaction reads (search/vocab.warm, for context's
    table); returns the tokens kept. A state memoryd did not make keeps nothing."""
    state = counts(conn)
    if state.key is None:
        return 0
    found = conn.execute(vocab.COMMON.format(name=VOCAB_ROW), (above,)).fetchall()
    with state.lock:
        for token, count in found[: max(0, MAX_TERMS - len(state.known))]:
            state.known.setdefault(token, count)
    return len(found)


def counts(conn: sqlite3.Connection) -> Counts:
    """The figures of context_hits as this transaction sees it (from cache when unchanged)."""
    path = dbname.main_file(conn)
    record, hits_figures = index_generation.current(conn)
    blocks = dict(conn.execute(FIGURES, (bm25.AVERAGES_ID, bm25.STRUCTURE_ID)))
    rows, tokens = bm25.totals(blocks.get(bm25.AVERAGES_ID))
    vocab.ensure_vocab(conn, VOCAB_ROW, TABLE)
    if record is None or record.figures != hits_figures or not path:
        return Counts(None, rows, tokens / rows if rows else 0.0)
    key = (
        record.lineage,
        record.serial,
        blocks.get(bm25.AVERAGES_ID),
        blocks.get(bm25.STRUCTURE_ID),
    )
    with _LOCK:
        before = _states.get(path)
        if before is not None and before.key == key:
            return before
        state = _states[path] = Counts(key, rows, tokens / rows if rows else 0.0)
    return state
