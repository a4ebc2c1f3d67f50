"""A turn's row in context's table as context.py writes it: the table, the neighbour column and
the tokenizer. Apart from context.py so that what reads the table's tokens (lexbound.py) need
not import the mode.
"""

from collections.abc import Sequence

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


def probe() -> vocab.Probe:
    """The table's tokenizer, run on demand (nothing is written to the index)."""
    return vocab.probe_for(CREATE, TABLE)
