"""The best rows of an FTS5 OR query at a bounded cost, for hybrid's lists at a million records:
FTS5 never ranks a common word's whole list, whatever the question.

At a million records FTS5 ranks a word held by 100,000 rows in 100 to 400 ms, however few of
them belong in the top k, and the exact searches (topk.py, maxscore.py) must let it whenever the
rarer words cannot prove their answer. Here the answer may be approximate, and its cost bounded:
FTS5 ranks at most the budget's rows (twice at most, see 3.; once more in a round whose PARTS
rows end in a run of equal scores that goes on), SCORED_MOST rows are scored one by one, and
PROBED_MOST words are probed.

1. The words read: every word when all their rows fit in the budget (the answer is then exact);
   topk.split()'s when they hold from k to budget rows; otherwise the rarest words that fit
   (within()), a word no row holds among them.
2. FTS5 ranks the read words' rows once, by the read phrases (a run of equal parts across the
   PARTS-th row read again in ties.py's order, newest first, so that a rebuilt index, whose rowids
   differ, keeps the same rows as the live one); every skipped word is probed (its AND with
   the read words, which seeks through at most the budget's rows; the rarest PROBED_MOST of
   them), and the read rows best placed to reach the top k are scored exactly, best bound
   first, equal bounds in the order read (candidates.py).
3. When the words that fit give fewer than k rows (a question of common words alone, or a name
   no row holds beside them), the rarest word too common to read whole fills the list: the
   budget's worth of its newest rows, ranked the same way, the other words probed among them.
   An owner's question in common words is answered from recent memory first; the dense half of
   hybrid still searches every row.

Every score returned is the row's exact bm25 (FTS5's own, its idf over the whole table); what may
be left out is a row that only the skipped words would lift into the top k, or an older row
holding common words alone. In a table of at most EXACT_ROWS rows: None, and the caller's exact
search answers (cheap enough there).
"""

import sqlite3
from collections.abc import Callable, Sequence

from memoryd.search import candidates, ties, tokencount, topk
from memoryd.search.candidates import State, Terms

# In a table of at most this many rows, None: the caller's exact search (maxscore) is cheap
# enough there (hybrid's p99 55 ms at 100,000 records, 404 ms at a million), and exact.
EXACT_ROWS = 250_000
# The read rows FTS5 returns, best first (one round: what lies beyond is left out).
PARTS = 256
# The rows scored one by one (their texts tokenized), at most: tokenizing and scoring a row costs
# about as much as FTS5 ranking forty (a question's spec part scored 470 rows in 15 ms at 512).
SCORED_MOST = 256
# The rows of the round of a common word's newest rows (3. above) scored one by one, at most.
WINDOW_SCORED = 256
# The rarest skipped words probed with an AND, at most: a question's commoner words (stopwords,
# in the spec's table) add little to any score, and each AND reads their rows among the read ones.
PROBED_MOST = 6
# The rowid from which on a word's newest rows lie.
WINDOW_START = (
    "SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"
)


def ranked(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    state_of: Callable[[sqlite3.Connection], State],
    terms: Sequence[str],
    k: int,
    budget: int,
) -> list[tuple[int, float]] | None:
    """(rowid, score) of at most k rows of table for `"t1" OR "t2" ...` over terms, best first
    (score: -bm25, FTS5's own to the bit, equal scores in ties.py's order), found within budget
    rows ranked by FTS5 (see the module's docstring); None in a table of at most EXACT_ROWS rows,
    or when a term is not one token."""
    if k < 1:
        return None
    found = candidates.prepare(conn, table, state_of, terms, EXACT_ROWS)
    if found is None:
        return None
    docs = found.docs
    read = list(docs) if found.total <= budget else topk.split(docs, found.weight_of, found.total)
    if read is None or not k <= sum(docs[token] for token in read) <= budget:
        read = within(docs, budget)
    scored: dict[int, float] = {}  # every row scored one by one, by either round
    scores: dict[int, float] = {}
    if any(docs[token] for token in read):
        scores.update(_round(conn, table, found, read, k, scored))
    over = [t for t in sorted(docs, key=lambda t: (docs[t], t)) if t not in read and docs[t]]
    if len(scores) < k and over:
        start = _window_start(conn, table, found.spelling[over[0]], budget)
        most = len(scored) + WINDOW_SCORED
        scores.update(_round(conn, table, found, over[:1], k, scored, start, most))
    return ties.best(conn, scores, k)


def within(docs: dict[str, int], budget: int) -> list[str]:
    """The rarest tokens whose rows (a row counted once per token) are within budget; a token no
    row holds is always among them."""
    read: list[str] = []
    rows = 0
    for token in sorted(docs, key=lambda token: (docs[token], token)):
        rows += docs[token]
        if rows > budget:
            break
        read.append(token)
    return read


def _round(
    conn: sqlite3.Connection,
    table: tokencount.Table,
    found: Terms,
    read: list[str],
    k: int,
    scored: dict[int, float],
    window: int | None = None,
    most: int = SCORED_MOST,
) -> dict[int, float]:
    """The exact scores of the best rows holding a read token (at or above window's rowid), the
    PROBED_MOST rarest skipped tokens probed among them."""
    read_expression = found.expression(read)
    skipped = [token for token in found.docs if token not in read]
    bound_of = found.bounds(skipped)
    limit = max(PARTS, k)
    parts = candidates.parts_in_order(conn, table, read_expression, limit, window)
    if not parts:
        return {}
    cutoff = parts[-1][1] if len(parts) == limit else None
    probed: dict[str, set[int]] = {}
    rarest = sorted(skipped, key=lambda token: (found.docs[token], token))[:PROBED_MOST]
    candidates.probe_skipped(
        conn, table, found, parts, k, rarest, bound_of, read_expression, probed, 0.0, window
    )
    return candidates.score(conn, table, found, parts, cutoff, k, probed, bound_of, scored, most)


def _window_start(
    conn: sqlite3.Connection, table: tokencount.Table, spelling: str, rows: int
) -> int | None:
    """The rowid from which on the newest rows holding the term lie, that many (None: all its
    rows)."""
    query = WINDOW_START.format(table=table.name)
    row = conn.execute(query, (f'"{spelling}"', max(rows, 1) - 1)).fetchone()
    return None if row is None else row[0]
