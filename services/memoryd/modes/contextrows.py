"""A turn's row in context's table as context.py writes it: the table, the neighbour column and
the tokenizer, and the text as the table holds it (runs of scripts written without spaces as their
bigrams: unspaced.py). Apart from context.py so that what reads the table's tokens (lexbound.py)
need not import the mode.
"""

from collections.abc import Sequence

from memoryd.modes import unspaced
from memoryd.search import vocab

TABLE = "context_hits"
CREATE = (
    "CREATE VIRTUAL TABLE context_hits USING fts5(text, near, date, tokenize = 'porter unicode61')"
)
NEIGHBOURS = 2
NEIGHBOUR_CHARS = 1000


def near(window: Sequence[tuple], i: int) -> str:
    """The neighbour column of window[i]: the text of the NEIGHBOURS turns before and after it in
    window (a session's turns in order, (rowid, time, text)), each cut to NEIGHBOUR_CHARS."""
    lo, hi = max(0, i - NEIGHBOURS), min(len(window), i + NEIGHBOURS + 1)
    return "\n".join(window[j][2][:NEIGHBOUR_CHARS] for j in range(lo, hi) if j != i)


def row(rowid: int, text: str, near_text: str, date: str) -> tuple[int, str, str, str]:
    """The row context_hits holds for a record: its text and its neighbours' as the table holds
    them (unspaced.stored: the characters that can be a word alone, in its own text only), and its
    date in words."""
    return rowid, unspaced.stored(text), unspaced.stored(near_text, alone=False), date


def probe() -> vocab.Probe:
    """The table's tokenizer, run on demand (nothing is written to the index)."""
    return vocab.probe_for(CREATE, TABLE)
