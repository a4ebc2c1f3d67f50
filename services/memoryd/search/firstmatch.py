"""Where a text matches a query as FTS5 matches it, found by FTS5 itself.

A long record's snippet is a window around the first place its text matches the query. FTS5
matched the record through its table's tokenizer, not as the words were typed: unicode61 folds case
and removes diacritics ("cafe" finds "Café", "Zurich" finds "Zürich") and context's table stems
with porter as well ("delay" finds "delayed", "meeting" finds "meetings"). Looking for the words as
typed missed those forms, and the snippet fell back to the text's first characters, which do not
hold what was found. So the text is put in an in-memory FTS5 table of the searched table's own
schema (vocab.py's probe: nothing is written to the index), matched with the same expression, and
highlight() marks where the first match starts. The folding, the stemming and what counts as a
token are the tokenizer's, as the table's CREATE statement sets them, never a copy in Python.
"""

from memoryd.search.tokencount import Table

# The first of these code points (Supplementary Private Use Area-A on) that the text does not
# hold marks where the first match starts.
_MARKS = range(0xF0000, 0x110000)


def _mark(text: str) -> str | None:
    """A character the text does not hold (None only if it holds every candidate)."""
    first = chr(_MARKS[0])
    if first not in text:
        return first
    held = set(text)
    return next((chr(code) for code in _MARKS if chr(code) not in held), None)


def first_match(text: str, expression: str | None, table: Table) -> int:
    """Where the first token of text that matches expression (an FTS5 MATCH expression of quoted
    terms, query.terms_expression) starts when text is the first column of a row of table, as a
    character offset; 0 when no token of it matches (a row found through its neighbours, its date
    or its vector) or there is no expression. A table that holds the text written otherwise
    (table.stored) is matched on what it holds, and the place mapped back to the text."""
    if expression is None or not text:
        return 0
    where = None
    if table.stored is not None:
        text, where = table.stored(text)
    mark = _mark(text)
    if mark is None:
        return 0
    probe = table.probe()
    insert = f"INSERT INTO {table.name} (rowid, {table.columns[0]}) VALUES (1, ?)"
    marked = (
        f"SELECT highlight({table.name}, 0, ?, '') FROM {table.name}"  # noqa: S608 (constants)
        f" WHERE {table.name} MATCH ? AND rowid = 1"
    )
    with probe.lock:
        probe.conn.execute("BEGIN")
        try:
            probe.conn.execute(insert, (text,))
            row = probe.conn.execute(marked, (mark, expression)).fetchone()
        finally:
            probe.conn.execute("ROLLBACK")
    if row is None or row[0] is None:
        return 0
    if where is None:
        # Nothing is put before the first mark, so its place in the output is its place in the
        # text.
        return max(0, row[0].find(mark))
    # The text as the table holds it need not keep the text's order (a run's characters are
    # written alone after its bigrams): the earliest place any match comes from. The n-th mark
    # has n marks before it in the output.
    places = [at - n for n, at in enumerate(_every(row[0], mark))]
    return min(where[place] for place in places) if places else 0


def _every(marked: str, mark: str) -> list[int]:
    """Where mark occurs in marked."""
    found, at = [], marked.find(mark)
    while at >= 0:
        found.append(at)
        at = marked.find(mark, at + 1)
    return found
