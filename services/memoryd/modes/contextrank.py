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
change rewrites. When memoryd only added rows since the last state seen, its counts are carried
into the new one, as the spec's are (search/vocab.py), with what the rows rewritten below the
new ones gained (contextcarry.py: a session's last turns gain the new turns in their neighbour
column); after a deletion they are counted afresh, and a state memoryd did not make is counted
for each search.
"""

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from memoryd.modes import contextcarry
from memoryd.search import bm25, budgeted, maxscore, tokencount, vocab
from memoryd.search import generation as index_generation

TABLE = "context_hits"
VOCAB_ROW = "memoryd_context_vocab"
VOCAB_DOCS = f"SELECT doc FROM temp.{VOCAB_ROW} WHERE term = ?"
FIGURES = f"SELECT id, block FROM {TABLE}_data WHERE id IN (?, ?)"
# FTS5 walks its rows in rowid order and seeks to a rowid bound: both are cheap.
LAST_ROWID = f"SELECT coalesce((SELECT rowid FROM {TABLE} ORDER BY rowid DESC LIMIT 1), 0)"
ADDED = f"SELECT count(*) FROM {TABLE} WHERE rowid > ?"
ADDED_HOLDING = f"SELECT count(*) FROM {TABLE} WHERE {TABLE} MATCH ? AND rowid > ?"
# What the rewritten rows gained since an earlier state, kept for this many earlier states.
GAINS_KEPT = 16
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
    last_rowid: int = 0
    # An earlier state's counts, still to be brought up to date: token: (count, its last rowid).
    carried: dict[str, tuple[int, int]] = field(default_factory=dict)
    gains: dict[int, dict[str, int] | None] = field(default_factory=dict)  # contextcarry's

    def docs(self, conn: sqlite3.Connection, token: str, spelling: str) -> int:
        with self.lock:
            found = self.known.get(token)
            carried = self.carried.get(token)
        if found is not None:
            return found
        count = None if carried is None else self._carry(conn, token, spelling, *carried)
        if count is None:
            row = conn.execute(VOCAB_DOCS, (token,)).fetchone()
            count = 0 if row is None else row[0]
        with self.lock:
            if len(self.known) >= MAX_TERMS:
                self.known.clear()
            self.known[token] = count
        return count

    def _carry(
        self, conn: sqlite3.Connection, token: str, spelling: str, count: int, since: int
    ) -> int | None:
        """The rows holding token now, from its count in the state of the rows up to since;
        None when that cannot be told cheaply (too many rows rewritten since)."""
        with self.lock:
            known = since in self.gains
            gains = self.gains.get(since)
        if not known:
            gains = contextcarry.gained(conn, since)
            with self.lock:
                if len(self.gains) >= GAINS_KEPT:
                    self.gains.clear()
                self.gains[since] = gains
        if gains is None:
            return None
        (added,) = conn.execute(ADDED_HOLDING, (f'"{spelling}"', since)).fetchone()
        return count + added + gains.get(token, 0)


_LOCK = threading.Lock()
_states: dict[str, Counts] = {}  # per database file: the last state seen


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
        found = budgeted.ranked(conn, table, lambda _conn: state, terms, limit, budget)
        if found is not None:
            return [(rowid, -score) for rowid, score in found]
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
    path = conn.execute("PRAGMA database_list").fetchone()[2]
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
    (last_rowid,) = conn.execute(LAST_ROWID).fetchone()
    state = Counts(key, rows, tokens / rows if rows else 0.0, last_rowid=last_rowid)
    if before is not None and _only_added(conn, state, before):
        with before.lock:
            carried = dict(before.carried)
            carried.update((t, (n, before.last_rowid)) for t, n in before.known.items())
        if len(carried) <= MAX_TERMS:
            state.carried = carried
    with _LOCK:
        _states[path] = state
    return state


def _only_added(conn: sqlite3.Connection, now: Counts, before: Counts) -> bool:
    """Whether the table moved from before to now only by memoryd adding rows: the same
    lineage, a later serial, and the rows above before's last rowid are exactly the rows gained
    (search/vocab.py's test, for context's table)."""
    if before.key is None or now.key is None or before.key[0] != now.key[0]:
        return False
    # The same serial with other figures of context_hits: not a commit of memoryd's indexer.
    if now.key[1] <= before.key[1] or now.last_rowid < before.last_rowid:
        return False
    (added,) = conn.execute(ADDED, (before.last_rowid,)).fetchone()
    return now.rows == before.rows + added
