"""How many times each query token occurs in each column of a few rows, counted by FTS5's own
tokenizer.

The exact top-k search (topk.py) scores its candidate rows itself, and bm25 needs each query
token's count in each column of the row. The rows' texts are read from the FTS5 table's content
table and tokenized by an in-memory FTS5 table of the same schema (vocab.py's probe), whose
fts5vocab 'instance' table lists every token with its column: the counts are FTS5's, not a
Python re-implementation's. Nothing is written to the index.
"""

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.search import schema, vocab


@dataclass(frozen=True)
class Table:
    """An FTS5 table as the exact top k scores it: its name and CREATE statement (the callers'
    constants, never input), its columns in order, and bm25's weight for each (empty: FTS5's
    default, 1.0 each, and `bm25(name)` as the score); stored: how a record's text is written into
    its first column when that is not the text itself (context's runs of scripts written without
    spaces, modes/unspaced.py), with where each character of it comes from in the text (None
    when the text is written as it is)."""

    name: str
    create: str
    columns: tuple[str, ...]
    weights: tuple[float, ...] = ()
    stored: Callable[[str], tuple[str, list[int] | None]] | None = None

    def weight(self, column: int) -> float:
        return self.weights[column] if column < len(self.weights) else 1.0

    def score(self) -> str:
        """The bm25 call of this table's ranking."""
        return f"bm25({', '.join([self.name, *map(repr, self.weights)])})"

    def probe(self) -> vocab.Probe:
        return vocab.probe_for(self.create, self.name)


SPEC = Table("hits", schema.SCHEMA[0], ("text",))

COUNTS = (
    "SELECT doc, col, term, count(*) FROM probe WHERE term IN (SELECT value FROM json_each(?))"
    " GROUP BY doc, col, term"
)


def counts(
    conn: sqlite3.Connection, rowids: list[int], tokens: list[str], table: Table = SPEC
) -> dict[int, dict[str, list[int]]]:
    """For each rowid that has a text, the times each of tokens occurs in each of the table's
    columns (a token absent from the row is absent here)."""
    found: dict[int, dict[str, list[int]]] = {}
    if not rowids:
        return found
    width = len(table.columns)
    content = ", ".join(f"c{n}" for n in range(width))
    texts = conn.execute(
        f"SELECT id, {content} FROM {table.name}_content"  # noqa: S608 (the caller's constants)
        " WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(rowids)),),
    ).fetchall()
    for row in texts:
        found[row[0]] = {}
    insert = (
        f"INSERT INTO {table.name} (rowid, {', '.join(table.columns)}) VALUES (?{', ?' * width})"
    )
    probe = table.probe()
    with probe.lock:
        probe.conn.execute("BEGIN")
        try:
            probe.conn.executemany(insert, texts)
            wanted = (json.dumps(sorted(set(tokens))),)
            index = {name: n for n, name in enumerate(table.columns)}
            for rowid, column, token, times in probe.conn.execute(COUNTS, wanted):
                found[rowid].setdefault(token, [0] * width)[index[column]] = times
        finally:
            probe.conn.execute("ROLLBACK")
    return found
