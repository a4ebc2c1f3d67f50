"""An index some formats behind whose steps changed only what recall modes derive from the index's
own rows is kept, its stamp raised in place and those tables built again from its rows, rather
than rebuilt from every session log at the first start after an upgrade.

Format 4 changed only the neighbour column of recall modes context and hybrid (the agent's own
recall and memory calls are no turn's neighbour; hybrid leaves them out of its neighbours when it
reads them, so its vectors did not change), format 5 only the text of context's table (runs of
scripts written without spaces held as bigrams). The spec's rows of an index of format 3 or 4 are,
row for row, what a build of format 5 writes: rebuilding it from the logs cost an owner of a
million records minutes of recall answering from a part of them, for nothing. A spec index has
nothing more to change (a mode's tables are built by the code of the day when the mode is chosen,
modes.prepare). An index of context or hybrid has context's table marked stale in the transaction
that raises the stamp (modes/stale.py): it is built again from the rows as a change of mode builds
it (seconds at a few hundred thousand rows, once memoryd listens, recall answering by the spec's
search meanwhile and saying why), hybrid's vectors kept. A step that changed the rows themselves
(a table of STEPS' third part), or an index more formats behind than STEPS chains, is rebuilt
from the logs.
"""

import logging
import sqlite3
from pathlib import Path

from memoryd.index.connections import ZERO_FREED_PAGES
from memoryd.modes import stale

log = logging.getLogger(__name__)

# The format each format's index may be raised from; the tables derived from the index's own rows
# whose content that step changed (built again from the rows, the index kept); and the tables of
# rows it changed (an index holding one is rebuilt from the logs).
STEPS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "4": ("3", ("context_hits",), ()),
    "5": ("4", ("context_hits",), ()),
}


def _changed(older: str | None, newer: str) -> tuple[set[str], set[str]] | None:
    """The derived tables and the tables of rows the steps from format older up to newer
    changed; None when no chain of steps leads there."""
    derived: set[str] = set()
    rows: set[str] = set()
    while newer != older:
        step = STEPS.get(newer)
        if step is None:
            return None
        newer = step[0]
        derived.update(step[1])
        rows.update(step[2])
    return derived, rows


def raised(path: Path, stamp: dict[str, str] | None, wanted: dict[str, str]) -> bool:
    """Raise the stamp of the index at path to wanted, in place, when the two differ in the format
    alone, by steps that changed no table of rows the index holds, marking the derived tables it
    holds that they changed to be built again from its rows (modes.prepare); whether it did."""
    if stamp is None or set(stamp) != set(wanted):
        return False
    if any(stamp[key] != wanted[key] for key in wanted if key != "format"):
        return False
    if stamp.get("format") == wanted.get("format"):
        return False
    changed = _changed(stamp.get("format"), wanted.get("format", ""))
    if changed is None:
        return False
    derived, rows = changed
    # One transaction, the mark's CREATE TABLE in it too: a kill leaves the old stamp and no
    # mark, or both raised and marked.
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(ZERO_FREED_PAGES)
        conn.execute("BEGIN IMMEDIATE")
        held = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        if held & rows:
            conn.execute("ROLLBACK")
            return False
        renewed = held & derived
        if renewed:
            why = (
                f"index format {wanted['format']} holds it otherwise than format"
                f" {stamp['format']}, which the index was built with"
            )
            stale.mark(conn, renewed, why)
        conn.execute("UPDATE settings SET value = ? WHERE name = 'format'", (wanted["format"],))
        conn.execute("COMMIT")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
    log.info(
        "index %s: format %s holds its rows as format %s does: kept, its stamp raised%s",
        path,
        stamp["format"],
        wanted["format"],
        f"; {', '.join(sorted(renewed))} built again from its rows, not from sessions/"
        if renewed
        else "",
    )
    return True
