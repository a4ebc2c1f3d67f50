"""Whether another program wrote the index file since memoryd's last commit, as a start finds it.

Every transaction of memoryd's ends with the generation record of the FTS5 figures it commits
(search/generation.py), and any other program's write to the full-text table changes them: a
memoryd from before the record, or from before the index's format stamp, which writes into the
current file as it is. The first transaction of a start seals the record anew, so the open reads
this before it (index.py), on a connection of its own, and the start's sweep of what
memory/forgotten.jsonl lists (forgottensweep.py) runs only when it is true. Two small rows read.
"""

import sqlite3
from pathlib import Path

from memoryd.search import generation


def others_wrote(path: Path) -> bool:
    """True unless the record of memoryd's last commit holds the figures the file at path holds
    now; true too when it cannot be read (the sweep that follows then looks)."""
    try:
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA query_only = 1")
            record, now = generation.current(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return True
    return record is None or record.figures != now
