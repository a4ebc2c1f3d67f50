"""A hit's snippet, read without loading the record's whole text.

Recall used to select each hit's whole text to cut at most 600 characters from it: a 50 MB record
cost 50 MB in SQLite and as much again in Python, per recall. Here the text is read through
SQLite's incremental blob I/O on FTS5's content table (hits_content, column c0), which reads only
the pages asked for:

- a text of at most WHOLE bytes (every normal record) is read whole and cut by query.snippet, so
  its snippet is exactly what it always was;
- a longer text is cut from its first HEAD bytes: the first matching term is looked for there (not
  further), and the window around it is taken from there. A text that long is always longer than
  the snippet, so the rest of the rule is unchanged.
"""

import sqlite3
from collections.abc import Sequence

from memoryd.search.query import _LEAD, ELLIPSIS, SNIPPET_LIMIT, _first_match, snippet

WHOLE = 65_536
# The search region, plus room for a window that starts at its very end (4 bytes a character).
HEAD = WHOLE + 4 * SNIPPET_LIMIT
TYPE_OF = "SELECT typeof(c0) FROM hits_content WHERE id = ?"


def _decode_prefix(data: bytes) -> str:
    """UTF-8 bytes cut at an arbitrary point: drop the character the cut split, if any."""
    for cut in range(4):
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


def long_snippet(head: str, terms: Sequence[str], limit: int = SNIPPET_LIMIT) -> str:
    """query.snippet's window for a text longer than WHOLE bytes, from its first characters."""
    text = head.lstrip()
    searched = text[: max(0, len(text) - limit)]
    position = _first_match(searched, terms)
    start = max(0, position - _LEAD)
    if start == 0:
        return text[: limit - 1] + ELLIPSIS
    return ELLIPSIS + text[start : start + limit - 2] + ELLIPSIS


def hit_snippet(conn: sqlite3.Connection, rowid: int, terms: Sequence[str]) -> str | None:
    """The snippet of row rowid of hits for a query's terms; None when the row holds no text
    (NULL or a number, written by hand: memoryd writes text), which blob I/O cannot open."""
    held = conn.execute(TYPE_OF, (rowid,)).fetchone()
    if held is None or held[0] not in ("text", "blob"):
        return None
    with conn.blobopen("hits_content", "c0", rowid, readonly=True) as blob:
        size = len(blob)
        if size <= WHOLE:
            return snippet(blob.read().decode("utf-8", errors="replace"), terms)
        head = blob.read(HEAD)
    return long_snippet(_decode_prefix(head), terms)
