"""A restore's session logs: what the index read of each one the home lacks leaves it at once.

memoryd lays a restore's memory files; bxctl lays the archive's session logs after it, each only
where the home has no log (sessionlay.py), and tells memoryd of each so that it is read. A log the
home lacks but the index still holds rows of (removed by the owner before the restore, and not yet
found gone: removedlook.py looks every 30 s) would otherwise keep those rows until bxctl's
session_updated reaches memoryd, and longer when it does not (the loopd socket busy or not
answering: "memoryd indexes them at its next start"); and the archive's copy laid in its place,
shorter or another log of the same name, is caught only by the indexer's checks of the file read
(its inode, its size, a hash of the bytes before the offset), which a freed inode given out again
to a copy of the same size can pass. Recall would then answer with text that no log of the
restored home holds.

So before a restore answers, on the writer, the index drops the rows and progress of every session
whose log the archive holds and the home lacks now (gone.py, as for a session the owner removed:
its label stays, so the log laid is read at the label memoryd had seen), and any reading again of
it under way (reread.py). The log bxctl lays is then read from its start as a new one. It costs a
row looked up for each log the archive holds, and a stat or two for each the index holds, never a
scan of the index: the sessions whose log the home has are the ones bxctl keeps, and their rows are
of the log that stays.
"""

import logging
import os

from memoryd.index import gone, indexer, newindex, reread
from proto.messages import is_session_id
from proto.plural import counted

log = logging.getLogger(__name__)


def archived(manifest: dict) -> list[str]:
    """The sessions whose log (sessions/<id>/0.jsonl) the archive's manifest lists."""
    found = set()
    for item in manifest.get("files", ()):
        path = item.get("path") if isinstance(item, dict) else None
        if not isinstance(path, str):
            continue
        head, session, tail = (path.split("/", 2) + ["", ""])[:3]
        if head == "sessions" and tail == "0.jsonl" and is_session_id(session):
            found.add(session)
    return sorted(found)


def _lacks(base: str, home, session: str) -> bool:
    """Whether the home has no log for session (one lstat when it has one; the two of
    indexer.log_problem when not, so that a folder memoryd may not search is not taken for
    none: a log there stays, and bxctl lays none over it)."""
    try:
        os.lstat(f"{base}/{session}/0.jsonl")
    except FileNotFoundError:
        return isinstance(indexer.log_problem(home, session, base), FileNotFoundError)
    except OSError:
        return False
    return False


def drop(index, sessions: list[str]) -> int:
    """On the index's writer: drop the rows, progress and any reading again of those of sessions
    (the archive's) whose log the home lacks and which the index holds; how many. The errors of
    the index's writer are raised (IndexDamaged, IndexUnwritable): the caller says them."""
    if not sessions or newindex.folder_problem(index.home) is not None:
        return 0  # sessions/ not a folder: no log under it is gone, and bxctl lays none
    base = os.fspath(index.home.sessions)  # paths made as text: a stat a log, no Path objects
    with index._damage_refused("the sessions a restore replaces"):
        conn = index._write()
        lacked = [
            session
            for session in sessions
            if gone.holds(conn, session) and _lacks(base, index.home, session)
        ]
    if not lacked:
        return 0
    gone.remove(index, lacked)  # one line each: the log named, its records left the index
    for session in lacked:
        index._aside(session, None)  # a damaged log's reading is not the log laid
    with index._damage_refused("the sessions a restore replaces"), index._transaction(conn):
        for session in lacked:
            reread.end(conn, session)
    log.info(
        "%s: a restore's archive holds %s the home lacks; the index dropped what it held of "
        "them, and reads each one laid from its start",
        index.home.sessions,
        counted(len(lacked), "session log"),
    )
    return len(lacked)
