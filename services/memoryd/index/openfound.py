"""What an open of the index finds in index/ and clears before it opens the file.

A reindex killed mid-way leaves index/memory.sqlite3.new, and a kill before a merge mark's rename
its temporary file: both are removed (logged). An index that is damaged (not SQLite, other tables,
failing quick_check) is deleted, for it is disposable, logged once with the runbook entry
memory-index-damaged; one built with other settings (the settings table) is rebuilt, logged, unless
a format step raises it in place (formatstep.py). Either way the sessions' labels it held are kept
(labelkept.py) and handed to the file started anew (carry). Kept apart from the index (index.py),
which opens what is left.
"""

import logging
import os

from memoryd.index import carryfile, formatstep, indexer, labelkept
from memoryd.index.dbfile import damage, remove_database, remove_own_temps

# Logged under the index's name, as before what an open clears had a module of its own.
log = logging.getLogger("memoryd.index.index")


def clear(index) -> dict[str, labelkept.Label]:
    """Remove what a killed reindex or merge left, and a damaged index or one built with other
    settings; the sessions' labels the file removed held (none when none was)."""
    remove_own_temps(index.home.index_dir)
    if any(os.path.lexists(f"{index.new_path}{suffix}") for suffix in ("", "-wal", "-journal")):
        log.info("index %s: removed, left by a reindex that did not finish", index.new_path)
        remove_database(index.new_path)
    # The sessions' labels an index started anew must not lose (labelkept.py): read from
    # the file it replaces, when that can still be read (carry).
    kept: dict[str, labelkept.Label] = {}
    if not index.path.exists():
        return kept
    problem, stamp = damage(index.path)
    wanted = index.settings.stamp()
    if problem is not None or stamp != wanted:
        kept = labelkept.old_labels(index.path)
        labelkept.record(index.home, kept)
    if problem is not None:
        log.warning(
            "memory-index-damaged: %s: %s; rebuilding it from sessions/ and notes.md",
            index.path,
            problem,
        )
        remove_database(index.path)
    elif stamp != wanted and not formatstep.raised(index.path, stamp, wanted):
        log.warning(
            "index %s: built with %s, configured %s; rebuilding it from sessions/ and notes.md",
            index.path,
            indexer.describe_stamp(stamp),
            indexer.describe_stamp(wanted),
        )
        if not (index.mode == "hybrid" and carryfile.set_aside(index.path)):
            remove_database(index.path)
    return kept


def carry(index, conn, kept: dict[str, labelkept.Label]) -> dict[str, labelkept.Label]:
    """The old file's labels in the new one, as a reindex's build keeps them (newindex.py):
    a removed session's is left behind for a log made again under its name; a log that is
    there is read as it is and, when it ends laxer than the old file had read it, again at
    that label (the floor each log's first catch-up is given: catch_up_session_part). Kept
    in memory until that catch-up: a stop before it leaves those logs the journal's floor."""
    there: dict[str, labelkept.Label] = {}
    for name, label in kept.items():
        session = name.removeprefix("sessions/").removesuffix("/0.jsonl")
        if os.path.lexists(index.home.session_log(session)):
            there[name] = label
        else:
            labelkept.keep_left(conn, name, label)
    return there
