"""Per-term row counts and the index figures bm25 needs, cached per index generation.

FTS5's idf needs n(t), the rows holding term t. FTS5 keeps no such count: it counts a term's whole
list every time (fts5vocab does the same). The exact top-k search (topk.py) needs n(t) for every
query term, so it is counted once per index generation and kept, by fts5vocab. The fts5vocab table
lives in each connection's temp schema: nothing is added to the index file. Everything here runs
on reader threads, never on the event loop.

A generation is the record memoryd's own commits write into the index (search/generation.py): a
random lineage, new with every file memoryd creates, every deletion and every change another
program made, and a serial within it. Cached figures are keyed to it, never to the file's inode or
FTS5's own records, which can repeat. A state whose FTS5 figures are not the record's was made by
another program after memoryd's last commit: its counts are taken afresh for each search and kept
for nothing else. A reindex's swap clears the cache (forget).

Counts carried from one generation to the next, or from the ones a build kept in the file for its
lineage (search/generation.py): within one lineage memoryd only added rows, so
every n(t) is what it was plus the new rows that hold t, which FTS5 counts cheaply with
`rowid > the last rowid counted` (it seeks in the term's list). The table's rows must also have
grown by exactly the rows above the old last rowid. Anything else counts afresh.
"""

import functools
import sqlite3
import threading
from dataclasses import dataclass, field

from memoryd.index import dbname
from memoryd.search import bm25, schema
from memoryd.search import generation as index_generation

VOCAB_ROW = "memoryd_vocab_row"
VOCAB_DOCS = f"SELECT doc FROM temp.{VOCAB_ROW} WHERE term = ?"
# Every term held by at least that many rows, in one pass over the table's lists (warm()).
COMMON = "SELECT term, doc FROM temp.{name} WHERE doc >= ?"
_LOCK = threading.Lock()
# Counts kept per generation, at most (a few MB).
MAX_TERMS = 100_000


@dataclass
class Stats:
    """One index generation's figures: rows, average row length, rows per term (filled lazily),
    and the counts of an earlier generation still to be brought up to date (token: (count,
    rowid counted up to))."""

    key: tuple[str, int] | None  # (lineage, serial); None: a state memoryd did not make
    rows: int
    avgdl: float
    last_rowid: int = 0
    docs: dict[str, int] = field(default_factory=dict)
    carried: dict[str, tuple[int, int]] = field(default_factory=dict)


# FTS5 walks its rows in rowid order and seeks to a rowid bound: both are cheap.
LAST_ROWID = "SELECT coalesce((SELECT rowid FROM hits ORDER BY rowid DESC LIMIT 1), 0)"
ADDED = "SELECT count(*) FROM hits WHERE rowid > ?"
ADDED_HOLDING = "SELECT count(*) FROM hits WHERE hits MATCH ? AND rowid > ?"


# Per database file: the figures of the last generation seen.
_stats: dict[bytes, Stats] = {}


class Probe:
    """An in-memory FTS5 table made by `create` (a table named `table`, the callers' constants)
    with its 'instance' vocabulary: the index's own tokenizer, run on demand. One per schema,
    kept for the process (probe_for)."""

    def __init__(self, create: str, table: str):
        self.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.conn.execute(create)
        self.conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5vocab({table}, 'instance')")
        self.lock = threading.Lock()
        self._insert = f"INSERT INTO {table} (rowid, text) VALUES (1, ?)"
        self.tokens = functools.lru_cache(maxsize=50_000)(self._tokens)

    def _tokens(self, term: str) -> tuple[str, ...]:
        """The tokens the table's tokenizer makes of a query term (usually one: the term,
        folded, and stemmed where the tokenizer stems)."""
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                self.conn.execute(self._insert, (term,))
                found = self.conn.execute("SELECT term FROM probe ORDER BY col, offset").fetchall()
            finally:
                self.conn.execute("ROLLBACK")
        return tuple(token for (token,) in found)


@functools.cache
def probe_for(create: str, table: str) -> Probe:
    return Probe(create, table)


def probe() -> Probe:
    """The spec's hits table's probe (the same tokenizer as the index's)."""
    return probe_for(schema.SCHEMA[0], "hits")


def tokens(term: str) -> tuple[str, ...]:
    """The tokens FTS5's tokenizer makes of a query term (usually one: the term, folded)."""
    return probe().tokens(term)


def ensure_vocab(conn: sqlite3.Connection, name: str = VOCAB_ROW, table: str = "hits") -> None:
    """The connection's fts5vocab table `name` ('row': a term's rows) over the FTS5 table
    `table`, in its temp schema (nothing in the file). Both are the callers' constants."""
    (found,) = conn.execute(
        "SELECT count(*) FROM temp.sqlite_master WHERE name = ?", (name,)
    ).fetchone()
    if found:
        return
    # A reader connection is query_only, which forbids even its temp schema.
    (query_only,) = conn.execute("PRAGMA query_only").fetchone()
    conn.execute("PRAGMA query_only = 0")
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING fts5vocab(main, {table}, 'row')"
        )
    finally:
        conn.execute(f"PRAGMA query_only = {int(query_only)}")


def forget() -> None:
    """Drop every cached figure (a reindex swapped a new file in)."""
    with _LOCK:
        _stats.clear()


def generation(conn: sqlite3.Connection) -> Stats:
    """The figures of the index as this transaction sees it, from cache when it has not changed."""
    path = dbname.main_file(conn)
    record, figures = index_generation.current(conn)
    if record is None or record.figures != figures or not path:
        # Not a state of memoryd's making (or an in-memory database): counted for this search.
        return _counted(conn, None, figures[0])
    key = (record.lineage, record.serial)
    with _LOCK:
        before = _stats.get(path)
    if before is not None and before.key == key:
        return before
    stats = _counted(conn, key, figures[0])
    if before is not None and _only_added(conn, stats, before):
        with _LOCK:
            carried = dict(before.carried)
            carried.update((t, (n, before.last_rowid)) for t, n in before.docs.items())
        if len(carried) <= MAX_TERMS:
            stats.carried = carried
    elif (stored := index_generation.stored_counts(conn, key[0])) is not None:
        rows, last_rowid, counts = stored
        if len(counts) <= MAX_TERMS and _only_added(conn, stats, Stats(key, rows, 0.0, last_rowid)):
            stats.carried = {token: (count, last_rowid) for token, count in counts.items()}
    with _LOCK:
        _stats[path] = stats
    return stats


def warm(conn: sqlite3.Connection, above: int) -> int:
    """Count every term of hits held by at least `above` rows, in one pass of fts5vocab over
    its lists, into the counts of the generation conn's transaction reads (so recall need not
    count them one by one); returns the terms kept. A state memoryd did not make keeps nothing."""
    ensure_vocab(conn)
    stats = generation(conn)
    if stats.key is None:
        return 0
    found = conn.execute(COMMON.format(name=VOCAB_ROW), (above,)).fetchall()
    with _LOCK:
        for term, count in found[: max(0, MAX_TERMS - len(stats.docs))]:
            stats.docs.setdefault(term, count)
    return len(found)


def _counted(
    conn: sqlite3.Connection, key: tuple[str, int] | None, averages: bytes | None
) -> Stats:
    rows, tokens_ = bm25.totals(averages)
    (last_rowid,) = conn.execute(LAST_ROWID).fetchone()
    return Stats(key, rows, tokens_ / rows if rows else 0.0, last_rowid)


def _only_added(conn: sqlite3.Connection, now: Stats, before: Stats) -> bool:
    """Whether the index moved from before (a generation seen, or the counts a build kept) to now
    only by memoryd adding rows: the same lineage, no earlier serial, and the rows above the old
    last rowid are exactly the rows gained."""
    if before.key is None or now.key is None or before.key[0] != now.key[0]:
        return False
    if now.key[1] < before.key[1] or now.last_rowid < before.last_rowid:
        return False
    (added,) = conn.execute(ADDED, (before.last_rowid,)).fetchone()
    return now.rows == before.rows + added


def docs(conn: sqlite3.Connection, stats: Stats, token: str, spelling: str) -> int:
    """The rows holding token: an earlier generation's count plus the rows added since, or
    counted by fts5vocab (it seeks to the term and reads its list: about half what counting the
    rows of `hits MATCH` costs, whatever the term); kept for the generation."""
    with _LOCK:
        known = stats.docs.get(token)
        carried = stats.carried.get(token)
    if known is not None:
        return known
    if carried is not None:
        count, since = carried
        (added,) = conn.execute(ADDED_HOLDING, (f'"{spelling}"', since)).fetchone()
        with _LOCK:
            stats.docs[token] = count + added
        return count + added
    row = conn.execute(VOCAB_DOCS, (token,)).fetchone()
    count = 0 if row is None else row[0]
    with _LOCK:
        if len(stats.docs) >= MAX_TERMS:
            stats.docs.clear()
        stats.docs[token] = count
    return count
