"""How many times each query token occurs in a few rows, counted by FTS5's own tokenizer.

The exact top-k search (topk.py) scores its candidate rows itself, and bm25 needs each query
token's count in the row. The rows' texts are read from FTS5's content table and tokenized by an
in-memory FTS5 table with the index's tokenizer (vocab.py's probe), whose fts5vocab 'instance'
table lists every token: the counts are FTS5's, not a Python re-implementation's. Nothing is
written to the index.
"""

import json
import sqlite3

from memoryd.search import vocab

TEXTS = "SELECT id, c0 FROM hits_content WHERE id IN (SELECT value FROM json_each(?))"
COUNTS = (
    "SELECT doc, term, count(*) FROM probe WHERE term IN (SELECT value FROM json_each(?))"
    " GROUP BY doc, term"
)


def counts(
    conn: sqlite3.Connection, rowids: list[int], tokens: list[str]
) -> dict[int, dict[str, int]]:
    """For each rowid that has a text, the times each of tokens occurs in it (absent: 0)."""
    found: dict[int, dict[str, int]] = {}
    if not rowids:
        return found
    texts = conn.execute(TEXTS, (json.dumps(sorted(rowids)),)).fetchall()
    for rowid, _text in texts:
        found[rowid] = {}
    probe = vocab.probe()
    with probe.lock:
        probe.conn.execute("BEGIN")
        try:
            probe.conn.executemany("INSERT INTO hits (rowid, text) VALUES (?, ?)", texts)
            wanted = (json.dumps(sorted(set(tokens))),)
            for rowid, token, times in probe.conn.execute(COUNTS, wanted):
                found[rowid][token] = times
        finally:
            probe.conn.execute("ROLLBACK")
    return found
