"""A session's label in the index never gets less strict than what memoryd has seen of the session.

The index reads a session's label from its log: each record carries the highest class of the tool
results before it, untrusted if any was (sessionrows.py). The owner may rewrite the log, shrink
it, or remove it and a new one be made under the same name; read again from a clean label, what
the session said after it read untrusted (or secret) content would be indexed as trusted (or
private), recalled so and written to identity by a clean session. So what is read again starts
from the label memoryd had already seen of the session:

- a log read again from its start (another file, or changed before the offset read: indexer.py)
  that now shows less than the label its saved state had reached (a tool result cut out) starts
  from that label, every record of it then at least that strict (over-strict is the safe side);
  one that shows as much (the same log copied to another disk or machine) is read as a reindex
  reads it, each record at its own label (again);
- a session whose reading is forgotten (its log removed: gone.py; or not readable: drop_log)
  leaves its label behind, when stricter than a clean session's, as an offsets row with no
  progress row (a "left label"); its log, made again, is read from it;
- a log whose reading ends less strict than memoryd had seen the session is read again at that
  label (floor): than memoryd recorded outside the index, each rise of the session's label the
  index or the witness saw (memory/labels.jsonl: risen.py, written here when a read reaches a
  log's end) and what its journal says the session was when it wrote to memory
  (journallabels.py), so this holds when the index was removed or found damaged; and, in a
  reindex's build, than the index it replaces held (newindex.py). A log that only grew ends at
  least as strict as it was read before, so an unchanged log indexes exactly as before. A label
  carried before the reindex (the log rewritten, then caught up) is carried again: the log has
  not changed since the old index read it, so starting from the old label only for a changed
  log would lose it.
  The old index's left labels go into the new one.

A read log can only make a label stricter from there, never laxer. A left label holds a session
id and a label, no text; the rows of a removed session still leave the index.
"""

import logging
import sqlite3
from pathlib import Path

from memoryd.home import Home
from memoryd.index import dbname, journallabels
from memoryd.index.journallabels import CLEAN, Label, below, stricter
from memoryd.index.sessionrows import LogState
from memoryd.trust import logscan, risen
from proto.files import open_read
from proto.labels import CLASS_RANK

log = logging.getLogger("memoryd.index.indexer")

# The tail hash of nothing read (LogState's default).
EMPTY_TAIL = LogState().tail
PREFIX = "sessions/"


def said(label: Label) -> str:
    """A label in words: "private, untrusted"."""
    return f"{label[0]}, {'untrusted' if label[1] else 'trusted'}"


def of(state: LogState) -> Label:
    return state.klass, state.untrusted


def _label(klass: object, untrusted: object) -> Label:
    """A label as the offsets table holds it; a class it cannot hold is taken as secret."""
    return (klass if isinstance(klass, str) and klass in CLASS_RANK else "secret"), bool(untrusted)


def left_label(conn: sqlite3.Connection, name: str) -> Label | None:
    """The label a log whose reading was forgotten left behind, if any."""
    row = conn.execute(
        "SELECT class, untrusted FROM offsets WHERE log = ?"
        " AND NOT EXISTS (SELECT 1 FROM progress WHERE log = ?)",
        (name, name),
    ).fetchone()
    return None if row is None else _label(*row)


def keep_left(conn: sqlite3.Connection, name: str, label: Label) -> None:
    """Leave label for log name, with nothing read of it (no-op for a clean label)."""
    conn.execute("DELETE FROM progress WHERE log = ?", (name,))
    if label == CLEAN:
        conn.execute("DELETE FROM offsets WHERE log = ?", (name,))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO offsets VALUES (?, 0, ?, ?, ?)",
            (name, label[0], int(label[1]), EMPTY_TAIL),
        )


def leave(conn: sqlite3.Connection, names: list[str]) -> None:
    """Forget how far each log was read, leaving its label when stricter than clean."""
    for name in names:
        row = conn.execute("SELECT class, untrusted FROM offsets WHERE log = ?", (name,)).fetchone()
        keep_left(conn, name, CLEAN if row is None else stricter(CLEAN, _label(*row)))


def start(conn: sqlite3.Connection, home: Home, session: str, name: str) -> LogState:
    """The state a log never read (or whose reading was forgotten) is read from."""
    left = left_label(conn, name)
    if left is None:
        return LogState()
    log.warning(
        "session log %s: read from its start at the label memoryd had already seen of session"
        " %s (%s), never a laxer one",
        home.session_log(session),
        session,
        said(left),
    )
    return LogState(klass=left[0], untrusted=left[1])


def again(home: Home, session: str, state: LogState, why: str) -> LogState:
    """The state a log read again from its start begins from. When the log as it is now shows a
    label at least as strict as the one it had reached (a copy of the same log, moved to another
    machine or folder, or an edit that kept its tool results), it is read from a clean label and
    every record gets the label the log itself gives it, as a reindex reads it; else it was
    altered to show less (a tool result cut out) and is read from the label it had reached, every
    record at least that strict. The look is one pass over the log's tool results (logscan.py),
    only when a log is read again, never at a catch-up of new records."""
    path = home.session_log(session)
    reached = of(state)
    if reached != CLEAN and below(_now(path), reached):
        log.warning(
            "session log %s %s and shows less than it did: indexing it again from the label it"
            " had reached (%s)",
            path,
            why,
            said(reached),
        )
        return LogState(klass=state.klass, untrusted=state.untrusted)
    log.warning("session log %s %s: indexing it again", path, why)
    return LogState()


def _now(path: Path) -> Label:
    """The label the log's tool results give now; secret and untrusted when it cannot be read
    (the caller then keeps the label it had: fail closed)."""
    try:
        with open_read(path) as f:
            shown = logscan.scan(f, 0, CLEAN[0], CLEAN[1], lambda: False)
    except OSError:
        return "secret", True
    return shown.klass, shown.untrusted


def floor(home: Home, session: str, state: LogState, kept: Label | None = None) -> Label | None:
    """The stricter label a log read to its end must be read again at, when memoryd had already
    seen the session at a stricter one than the log now shows (kept: the label the index this one
    replaces held; and its journal's); else None. A log that only grew since ends at least as
    strict as before, so this never reads an unchanged log again."""
    risen.rise(home, session, of(state))  # kept outside the index, which may be deleted
    if state.klass == "secret" and state.untrusted:
        return None  # nothing is stricter
    journalled = stricter(CLEAN, journallabels.label(home, session))
    journalled = stricter(journalled, risen.label(home, session))
    seen = stricter(journalled, kept)
    if not below(of(state), seen):
        return None
    raised = stricter(of(state), seen)
    where = (
        f"memory/{risen.FILE} or its journal records it so"
        if kept is None or below(kept, journalled)
        else "the index it replaces had read it"
    )
    log.warning(
        "session log %s: it shows %s, but memoryd had seen session %s as %s (%s): the log was"
        " altered; indexing it again at %s",
        home.session_log(session),
        said(of(state)),
        session,
        said(seen),
        where,
        said(raised),
    )
    return raised


def record(home: Home, labels: dict[str, Label]) -> None:
    """Each of labels (by log name, as the offsets table holds them) in memory/labels.jsonl
    (risen.py), where it survives the index: an index written before that file was kept gives
    its labels to it once, at the open: in one fsync'd append, before memoryd listens."""
    risen.rise_all(
        home,
        (
            (name.removeprefix(PREFIX).removesuffix("/0.jsonl"), label)
            for name, label in labels.items()
        ),
    )


def old_labels(path: Path) -> dict[str, Label]:
    """The labels stricter than clean that the index at path holds for session logs, by log
    name; nothing when there is no index there or it cannot be read (one line says so)."""
    if not path.exists():
        return {}
    try:
        conn = dbname.connect_read_only(path)
        try:
            rows = conn.execute(
                "SELECT log, class, untrusted FROM offsets"
                " WHERE log >= ? AND log < ? AND (class IS NOT ? OR untrusted != 0)",
                (PREFIX, PREFIX[:-1] + "0", CLEAN[0]),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as error:
        log.warning(
            "index %s: the sessions' labels it held are not kept (%s); the new index takes them"
            " from the logs and the journal",
            path,
            error,
        )
        return {}
    return {str(name): stricter(CLEAN, _label(klass, untrusted)) for name, klass, untrusted in rows}
