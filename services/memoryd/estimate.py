"""Every row holding one of a few terms, with an upper bound of its score, computed in SQLite.

FTS5's ranking costs several microseconds a row (its row length, its positions, the sorter). To
find the few rows that can reach the top k, topk.py needs a cheap figure per row instead: this
statement reads each term's rows and counts from fts5vocab (no text, no positions kept, no row
length) and sums bm25's terms in SQL for a row length of 1. bm25 falls as a row grows, so the sum
bounds the row's part of the score from above (up to rounding, which topk.py allows for). It
returns, highest bound first, each row's rowid, the terms it holds with their counts
("term:count term:count") and the bound.
"""


def statement(vocab_table: str, terms: int) -> str:
    """The SQL for this many terms. Parameters: the average row length, then (term, weight) for
    each term, the weight being the sum of idf over the query's phrases of that term."""
    branches = " UNION ALL ".join(
        f"SELECT doc, ?{3 + 2 * n} AS w, count(*) AS tf, ?{2 + 2 * n} AS term"
        f" FROM temp.{vocab_table} WHERE term = ?{2 + 2 * n} GROUP BY doc"
        for n in range(terms)
    )
    return (
        f"SELECT doc, group_concat(term || ':' || tf, ' '),"
        " sum(w * ((tf * 2.2) / (tf + 1.2 * (0.25 + 0.75 / ?1)))) AS bound"
        f" FROM ({branches}) GROUP BY doc ORDER BY bound DESC"
    )
