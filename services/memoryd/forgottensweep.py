"""The start's sweep of the index for what memory/forgotten.jsonl lists.

Every row memoryd adds passes the forgotten filter (index/forgottenrows.py), and a forget deletes
the rows it takes. Another program writing the index file is not held to that: a memoryd from
before forget knows nothing of forgotten.jsonl, and one from before the index's format stamp
writes into the current file without touching the stamp, so no rebuild follows. Run once on such a
home, it reads every session log again and writes the forgotten records back.

So at start, before the sockets listen, the index's rows are checked against forgotten.jsonl
(journal/keptout.rows_condition: every row of a key whose forget listed no digest, and each row of
the other keys that holds a forgotten text) and those found deleted, as a restore's purge deletes
them (data/purge.py), said in one line naming the index. Texts are matched by digest under the
keys listed only: the index keeps no digest of a row, and hashing every row's text would cost a
start seconds at a million records.

Gated by the index's generation record (search/generation.py): every transaction of memoryd's
writes the FTS5 figures it commits, and any other program's write to the full-text table changes
them. When the record holds the figures the file holds at open, memoryd made the last commit, and
its rows passed the filter: the start reads two small rows, nothing more. The sweep runs when
another program wrote, or when the index has no record (one from before it), and only when
forgotten.jsonl lists something.
"""

import logging
import sqlite3

from memoryd.data import purge
from memoryd.errors import MemorydError
from memoryd.journal import forgotten, keptout
from proto.plural import counted

log = logging.getLogger("memoryd")

COUNT = "SELECT count(*) FROM sources WHERE {}"


def sweep(index) -> int:
    """On the writer's connection, before the sockets listen: delete the rows forgotten.jsonl
    keeps out when another program wrote the index since memoryd's last commit (index.others_wrote,
    read by Index.open before this start's first transaction seals the record anew). Returns the
    session records and notes deleted; a failure is logged and leaves the index as it is."""
    if not getattr(index, "others_wrote", False):  # a stand-in without Index.open
        return 0
    try:
        if not forgotten.keys(index.home):
            return 0
        conn = index._write()
        gone = keptout.rows_condition(conn, index.home)
        if gone is None:
            return 0
        (found,) = conn.execute(COUNT.format(gone[0]), gone[1]).fetchone()  # fixed text
        if found:
            purge.purge_kept_out(index)
    except (OSError, sqlite3.Error, MemorydError) as e:
        log.error(
            "index %s: not checked for what memory/forgotten.jsonl lists: %s",
            index.path,
            (e.strerror if isinstance(e, OSError) else None) or str(e),
        )
        return 0
    if found:
        log.warning(
            "index %s: %s that memory/forgotten.jsonl lists removed; another program (an older "
            "memoryd) wrote them after this one's last commit",
            index.path,
            counted(found, "record"),
        )
    return found
