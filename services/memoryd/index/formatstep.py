"""An index one format behind that holds nothing the newer format changed is kept, its stamp
raised in place, rather than rebuilt from every session log at the first start after an upgrade.

Format 4 changed only the neighbour column of recall modes context and hybrid (the agent's own
recall and memory calls are no turn's neighbour), format 5 only their table's text (runs of
scripts written without spaces held as bigrams). An index of format 3 or 4 without those modes'
tables (spec's, the default) holds, row for row, what a build of format 5 would: rebuilding it
cost an owner of a million records minutes of recall answering from a part of them, for nothing.
A mode's tables are built by the code of the day when the mode is chosen (modes.prepare), so such
an index needs nothing later either. An index holding them is rebuilt (hybrid's vectors carried:
carryfile.py).
"""

import logging
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)

# The format each format's index may be raised from, and the tables whose rows that step changed.
STEPS = {
    "4": ("3", ("context_hits", "vectors")),
    "5": ("4", ("context_hits", "vectors")),
}


def _changed(older: str | None, newer: str) -> set[str] | None:
    """The tables the steps from format older up to newer changed; None when no chain of steps
    leads there."""
    changed: set[str] = set()
    while newer != older:
        step = STEPS.get(newer)
        if step is None:
            return None
        newer = step[0]
        changed.update(step[1])
    return changed


def raised(path: Path, stamp: dict[str, str] | None, wanted: dict[str, str]) -> bool:
    """Raise the stamp of the index at path to wanted, in place, when the two differ in the format
    alone, by steps that changed no table the index holds; whether it did."""
    if stamp is None or set(stamp) != set(wanted):
        return False
    if any(stamp[key] != wanted[key] for key in wanted if key != "format"):
        return False
    if stamp.get("format") == wanted.get("format"):
        return False
    changed = _changed(stamp.get("format"), wanted.get("format", ""))
    if changed is None:
        return False
    conn = sqlite3.connect(path)
    try:
        held = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        if held & changed:
            return False
        with conn:
            conn.execute("UPDATE settings SET value = ? WHERE name = 'format'", (wanted["format"],))
    finally:
        conn.close()
    log.info(
        "index %s: format %s holds nothing format %s changed: kept, its stamp raised",
        path,
        stamp["format"],
        wanted["format"],
    )
    return True
