"""Every row holding one of a few terms, with an estimate of its score, computed inside SQLite.

FTS5's ranking costs several microseconds a row (its row length, its positions, the sorter). To
find the few rows that can reach the top k, topk.py needs a cheap figure per row instead: this
statement reads each term's rows and counts from fts5vocab (no text, no positions kept), each
row's length from FTS5's docsize table (a varint, decoded with hex()), and sums bm25's terms in
SQL. The sum is an estimate (SQL adds in its own order; a length of three varint bytes or more,
16,384 tokens and up, is taken as 1, which only raises the figure), so it is used only to choose
which rows to score exactly, with a margin. It returns, best estimate first, each row's rowid,
the terms it holds with their counts ("term:count term:count"), its length, and the estimate.
"""

_HEX = "'0123456789ABCDEF'"


def _byte(i: int) -> str:
    """The value of byte i of the docsize blob s.sz, from its hex text."""
    high = f"instr({_HEX}, substr(hex(s.sz), {2 * i + 1}, 1)) - 1"
    low = f"instr({_HEX}, substr(hex(s.sz), {2 * i + 2}, 1)) - 1"
    return f"(({high}) * 16 + ({low}))"


_SIZE = (
    f"CASE length(s.sz) WHEN 1 THEN {_byte(0)}"
    f" WHEN 2 THEN ({_byte(0)} - 128) * 128 + {_byte(1)} ELSE NULL END"
)


def statement(vocab_table: str, terms: int) -> str:
    """The SQL for this many terms. Parameters: the average row length, then (term, weight) for
    each term, the weight being the sum of idf over the query's phrases of that term."""
    branches = " UNION ALL ".join(
        f"SELECT doc, ?{3 + 2 * n} AS w, count(*) AS tf, ?{2 + 2 * n} AS term"
        f" FROM temp.{vocab_table} WHERE term = ?{2 + 2 * n} GROUP BY doc"
        for n in range(terms)
    )
    size = f"coalesce({_SIZE}, 1)"
    return (
        f"WITH inst(doc, w, tf, term) AS MATERIALIZED ({branches})"
        f" SELECT i.doc, group_concat(i.term || ':' || i.tf, ' '), {_SIZE},"
        f" sum(i.w * ((i.tf * 2.2) / (i.tf + 1.2 * (0.25 + 0.75 * {size} / ?1)))) AS estimate"
        " FROM inst i JOIN hits_docsize s ON s.id = i.doc"
        " GROUP BY i.doc ORDER BY estimate DESC"
    )
