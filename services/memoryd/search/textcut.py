"""A hit's snippet, read without taking the record's whole text into Python.

Recall used to select each hit's whole text to cut at most 600 characters from it: a 50 MB record
cost 50 MB in Python, per recall. Here only the text's first HEAD bytes are read, in SQL
(substr of the value as a blob: bytes, not characters, from FTS5's content table hits_content,
column c0):

- a text of at most WHOLE bytes (every normal record, under [index] max_record_bytes' default) is
  read whole and cut by query.snippet, so its snippet is exactly what it always was;
- a longer text is cut from its first HEAD bytes: the first matching term is looked for there (not
  further), and the window around it is taken from there. A text that long is always longer than
  the snippet, so the rest of the rule is unchanged.

The matching term is looked for as the searched table's tokenizer matches it (firstmatch.py): the
spec's hits by default, context's table (porter stems) when the caller searched that.

Not through SQLite's blob I/O (Connection.blobopen), which reads only the pages asked for: CPython's
sqlite3 keeps a weak reference on the connection for every Blob ever opened and never drops it, and
the reader connections live as long as memoryd, so every hit of every recall grew memoryd for good.
SQLite itself loads a value whole to take its substr (and frees it at once): for a text under
WHOLE that is what blob I/O read too, and only an index whose max_record_bytes was raised holds
longer ones.
"""

import sqlite3
from collections.abc import Sequence

from memoryd.search.query import SNIPPET_LIMIT, _first_match, snippet, window
from memoryd.search.tokencount import SPEC, Table

WHOLE = 65_536
# The search region, plus room for a window that starts at its very end (4 bytes a character).
HEAD = WHOLE + 4 * SNIPPET_LIMIT
# The value's type, and its first bytes (at most HEAD of them).
READ = "SELECT typeof(c0), substr(CAST(c0 AS BLOB), 1, ?) FROM hits_content WHERE id = ?"


def _decode_prefix(data: bytes) -> str:
    """UTF-8 bytes cut at an arbitrary point: drop the character the cut split, if any."""
    for cut in range(4):
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


def long_snippet(
    head: str, terms: Sequence[str], limit: int = SNIPPET_LIMIT, table: Table = SPEC
) -> str:
    """query.snippet's window for a text longer than WHOLE bytes, from its first characters."""
    text = head.lstrip()
    searched = text[: max(0, len(text) - limit)]
    return window(text, _first_match(searched, terms, table), limit, whole=False)


def hit_snippet(
    conn: sqlite3.Connection, rowid: int, terms: Sequence[str], table: Table = SPEC
) -> str | None:
    """The snippet of row rowid of hits for a query's terms, around where they match as table's
    tokenizer matches them (the table the caller searched the terms in: the spec's hits by
    default); None when the row holds no text (NULL or a number, written by hand: memoryd writes
    text). A text and a blob read alike, as their bytes."""
    row = conn.execute(READ, (HEAD, rowid)).fetchone()
    if row is None or row[0] not in ("text", "blob"):
        return None
    data = row[1] or b""  # substr of an empty value is NULL
    if len(data) <= WHOLE:  # HEAD > WHOLE: the text is all there
        return snippet(data.decode("utf-8", errors="replace"), terms, table=table)
    return long_snippet(_decode_prefix(data), terms, table=table)
