"""context's lexical ranking without scoring every row that holds a term of the question.

context ranks `context_hits MATCH '"t1" OR "t2" ...'` by bm25 with column weights (the record's
own text, its neighbours' at a lower weight, its date). A whole-sentence question holds a word or
two that hundreds of thousands of rows hold, and FTS5 scores every one of them. ranked() gives the
same rows, in the same order, with the same scores, by topk.py's exact top k over this table:
the rows of the rarer terms ranked by FTS5, the few that may also hold a commoner term scored
here, and the commoner terms' rows left out when what they could add is below the k-th score.

What topk needs of the table, here:
- its tokens: the table's tokenizer (porter over unicode61, not the spec's), run by an in-memory
  FTS5 table of the same schema, whose fts5vocab 'instance' table lists each token with its
  column;
- a row's frequency of a token as bm25 weighs it: FTS5 adds the column's weight for each instance,
  column by column (its instances come in column order), so the same additions are made here;
  a row's length is the sum of its columns' (docsize), as bm25 takes it;
- n(t), the rows holding each token, counted by fts5vocab and kept for one state of the table:
  the index generation of memoryd's last commit (search/generation.py) with context_hits' own
  averages and structure records, which every change rewrites. A rewrite of a row's neighbour
  column (a session grew) can add a term to an old row, so counts are not carried from one state
  to the next as the spec's are; a state memoryd did not make is counted for each search.

`agrees()` checks the reproduction against this SQLite's bm25 once per process; when it differs,
or a term is not one token, context's own query answers.
"""

import functools
import json
import random
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memoryd.search import bm25, topk
from memoryd.search import generation as index_generation

TABLE = "context_hits"
COLUMNS = ("text", "near", "date")
VOCAB_ROW = "memoryd_context_vocab"
VOCAB_DOCS = f"SELECT doc FROM temp.{VOCAB_ROW} WHERE term = ?"
FIGURES = f"SELECT id, block FROM {TABLE}_data WHERE id IN (?, ?)"
TEXTS = f"SELECT id, c0, c1, c2 FROM {TABLE}_content WHERE id IN (SELECT value FROM json_each(?))"
COUNTS = (
    "SELECT doc, term, col, count(*) FROM probe WHERE term IN (SELECT value FROM json_each(?))"
    " GROUP BY doc, term, col"
)
# Counts kept per state of the table, at most.
MAX_TERMS = 20_000
_SELF_CHECK_ROWS = 300


@dataclass
class Counts:
    """One state of context_hits: its rows, average row length (all columns), rows per token."""

    key: tuple | None
    rows: int
    avgdl: float
    known: dict[str, int] = field(default_factory=dict)
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
_states: dict[str, Counts] = {}  # per database file: the last state seen


class _Probe:
    """An in-memory table of context_hits' schema: its tokenizer, run on demand."""

    def __init__(self, create: str):
        self.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.conn.execute(create)
        self.conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5vocab({TABLE}, 'instance')")
        self.lock = threading.Lock()

    @functools.lru_cache(maxsize=20_000)  # noqa: B019  (one probe per schema, kept for the process)
    def tokens(self, term: str) -> tuple[str, ...]:
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                self.conn.execute(f"INSERT INTO {TABLE} (rowid, text) VALUES (1, ?)", (term,))
                found = self.conn.execute("SELECT term FROM probe ORDER BY col, offset").fetchall()
            finally:
                self.conn.execute("ROLLBACK")
        return tuple(token for (token,) in found)

    def instances(self, texts: list[tuple], tokens: list[str]) -> dict[int, dict[str, list[int]]]:
        """For each row of texts (rowid, text, near, date): per token, its instances per column."""
        found: dict[int, dict[str, list[int]]] = {row[0]: {} for row in texts}
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                self.conn.executemany(
                    f"INSERT INTO {TABLE} (rowid, text, near, date) VALUES (?, ?, ?, ?)", texts
                )
                for doc, token, col, times in self.conn.execute(COUNTS, (json.dumps(tokens),)):
                    per_column = found[doc].setdefault(token, [0] * len(COLUMNS))
                    per_column[COLUMNS.index(col)] = times
            finally:
                self.conn.execute("ROLLBACK")
        return found


def weighed(per_column: Sequence[int], weights: Sequence[float]) -> float:
    """A token's frequency in a row as FTS5's bm25 sums it: each instance's column weight, added
    one at a time in column order (0.4 added twice is not 0.8 to the last bit, in general)."""
    freq = 0.0
    for times, weight in zip(per_column, weights, strict=True):
        for _ in range(times):
            freq += weight
    return freq


@functools.cache
def table(create: str, weights: tuple[float, ...]) -> topk.Table:
    """topk's view of context_hits, made by create (context.SCHEMA's statement), ranked with
    these column weights."""
    probe = _Probe(create)

    def freqs(
        conn: sqlite3.Connection, rowids: list[int], tokens: list[str]
    ) -> Mapping[int, Mapping[str, float]]:
        if not rowids:
            return {}
        texts = conn.execute(TEXTS, (json.dumps(sorted(rowids)),)).fetchall()
        found = probe.instances(texts, sorted(set(tokens)))
        return {
            rowid: {token: weighed(times, weights) for token, times in held.items()}
            for rowid, held in found.items()
        }

    return topk.Table(
        TABLE,
        weights,
        probe.tokens,
        counts,
        freqs,
        lambda: agrees(create, weights),
    )


def ranked(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    limit: int,
    create: str,
    weights: tuple[float, ...],
) -> list[tuple[int, float]] | None:
    """(rowid, bm25) of the best limit rows, best first (bm25 negative, as FTS5 gives it), as
    context's query ranks them; None when only that query can tell."""
    found = topk.scored(conn, table(create, weights), terms, limit)
    return None if found is None else [(rowid, -score) for rowid, score in found]


def counts(conn: sqlite3.Connection) -> Counts:
    """The figures of context_hits as this transaction sees it (from cache when unchanged)."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    record, hits_figures = index_generation.current(conn)
    blocks = dict(conn.execute(FIGURES, (bm25.AVERAGES_ID, bm25.STRUCTURE_ID)))
    rows, tokens = bm25.totals(blocks.get(bm25.AVERAGES_ID))
    _ensure_vocab(conn)
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


def _ensure_vocab(conn: sqlite3.Connection) -> None:
    """The connection's fts5vocab table over context_hits, in its temp schema."""
    (found,) = conn.execute(
        "SELECT count(*) FROM temp.sqlite_master WHERE name = ?", (VOCAB_ROW,)
    ).fetchone()
    if found:
        return
    # A reader connection is query_only, which forbids even its temp schema.
    (query_only,) = conn.execute("PRAGMA query_only").fetchone()
    conn.execute("PRAGMA query_only = 0")
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{VOCAB_ROW}"
            f" USING fts5vocab(main, {TABLE}, 'row')"
        )
    finally:
        conn.execute(f"PRAGMA query_only = {int(query_only)}")


@functools.cache
def agrees(create: str, weights: tuple[float, ...]) -> bool:
    """True when the reproduction gives this SQLite's weighted bm25 for every row of a small
    random table of context_hits' schema."""
    rng = random.Random(26)
    words = [f"w{n}" for n in range(10)]
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute(create)
        for _ in range(_SELF_CHECK_ROWS):
            texts = [
                " ".join(rng.choices(words, weights=range(10, 0, -1), k=rng.randint(0, 12)))
                for _ in COLUMNS
            ]
            conn.execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?)", texts)
        view = table(create, weights)
        state = counts(conn)
        score = view.bm25()
        sizes = dict(conn.execute(f"SELECT id, sz FROM {TABLE}_docsize"))
        for _ in range(20):
            query = rng.sample(words, rng.randint(1, 4))
            idfs = [bm25.idf(state.rows, state.docs(conn, w, w)) for w in query]
            expression = " OR ".join(f'"{w}"' for w in query)
            found = conn.execute(
                f"SELECT rowid, {score} FROM {TABLE} WHERE {TABLE} MATCH ?",  # noqa: S608
                (expression,),
            ).fetchall()
            freqs = view.freqs(conn, [rowid for rowid, _ in found], query)
            for rowid, rank in found:
                parts = [
                    (idf, freqs[rowid].get(w, 0.0)) for idf, w in zip(idfs, query, strict=True)
                ]
                size = sum(bm25.varints(sizes[rowid]))
                if -bm25.score(parts, size, state.avgdl) != rank:
                    return False
        return True
    finally:
        conn.close()
