"""Reading session logs and notes.md into the index (spec 6), one log at a time.

What a session record gives is in sessionrows.py; notes.md entries carry the label their header
gives.

Progress per log is the number of records read (spec 6's progress table) and, beside it in the
offsets table, the byte offset reached, the label in force there, a hash of the bytes just before
the offset and which file was read (file_of). Catching up seeks to the offset, so it costs what the
new records cost, not what the log is long. A log that is another file now (an editor's save,
sed -i: a new inode) whose bytes before the offset are not all the ones read, as a digest of them
shows (logprefix.py: a home copied or moved with cp -a is read on), or whose hash no longer
matches (it shrank, or was rewritten near the offset) is indexed again from its start, at the
label it had reached: a session's label never gets laxer, whatever is done to its log
(labelkept.py). notes.md, which the owner may edit
anywhere by hand, is indexed again from its start whenever its stat is not the one the index read
or memoryd's own write left, unless a digest of every byte read shows them unchanged
(notesparts.py, notesprefix.py): a redaction of an older note keeps the size and every byte near
the end, and a chmod or touch changes its times alone.

What one record may cost is bounded: a row indexes at most max_record_bytes of
its text, and a long log line is never read whole (sessionrows.py). The settings that change what
is indexed are stamped in the settings table (indexsettings.py), so that an index built with
others is rebuilt.

A session log is read in parts of at most PART_SECONDS of reading, PART_RECORDS records or
PART_BYTES bytes, each part in its own transaction (index_session_part), so that the one writer is
free between parts: a memory call waits for at most one part. So is notes.md (notesparts.py).

Which file a log is and whether it still holds what was read is logfile.py; the progress and
offsets rows are logstate.py; rows are added by rowsinsert.py; what was forgotten is kept out of
them by forgottenrows.py. The functions here run inside the caller's transaction and never commit.
"""

import sqlite3
from collections.abc import Callable

from memoryd import modes
from memoryd.home import Home
from memoryd.index import labelkept, logprefix, reread
from memoryd.index.forgottenrows import kept as _kept
from memoryd.index.logfile import (
    file_of,
    log_name,
    log_problem,
)
from memoryd.index.logfile import (
    moved as _moved,
)
from memoryd.index.logfile import (
    still_valid as _still_valid,
)
from memoryd.index.logfile import (
    tail_hash as _tail_hash,
)
from memoryd.index.logstate import load_state, save_state
from memoryd.index.rowsinsert import NEXT_AFTER, insert_rows
from memoryd.index.rowsinsert import insert_batch as _insert_batch
from memoryd.index.sessionrows import Part, session_rows
from memoryd.index.settings import (
    RECORD_BYTES,
    Settings,
    cap_text,
    describe_stamp,
    read_stamp,
    write_stamp,
)
from memoryd.search.schema import DELETIONS_PRAGMA, OPTIONAL_TABLES, SCHEMA, TABLES
from proto.labels import CLASS_RANK

# One part of a catch-up: at most this long reading, this many records, this many bytes of log.
PART_SECONDS = 0.2
PART_RECORDS = 50_000
PART_BYTES = 16 << 20
NOTES_LOG = "memory/notes.md"
NOTE_KINDS = ("noted", "moved", "dropped")
# What notes.md's tail hash covers: with its stat (index_notes), what tells memoryd's own append,
# which the index goes on from, from anything else, while a write costs the same at a million
# notes as at ten.
NOTES_WINDOW = 65_536


def create_schema(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """What is wrong with an index's tables, or None when they are exactly ours."""
    found = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    for name, statement in zip(TABLES, SCHEMA, strict=True):
        if name in OPTIONAL_TABLES and name not in found:
            continue
        if found.get(name) != statement:
            return f"table {name} is missing or has another definition"
    return None


def _note_deletion(conn: sqlite3.Connection) -> None:
    (deletions,) = conn.execute(f"PRAGMA {DELETIONS_PRAGMA}").fetchone()
    conn.execute(f"PRAGMA {DELETIONS_PRAGMA} = {(int(deletions) + 1) & 0x7FFFFFFF}")


def _delete_rows(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    _note_deletion(conn)
    modes.rows_deleted(conn, where, params)  # recall modes: their tables follow
    conn.execute(
        f"DELETE FROM hits WHERE rowid IN (SELECT rowid FROM sources WHERE {where})", params
    )  # noqa: S608
    conn.execute(f"DELETE FROM sources WHERE {where}", params)  # noqa: S608


def drop_log(conn: sqlite3.Connection, session: str) -> None:
    """Forget what was indexed of a session's log and how far it was read: the next catch-up
    reads it from its start, at the label it had (labelkept.leave)."""
    _delete_rows(conn, "kind = 'session' AND session = ?", (session,))
    labelkept.leave(conn, [log_name(session)])
    reread.end(conn, session)


def index_session(
    conn: sqlite3.Connection,
    home: Home,
    session: str,
    max_class: str | Settings,
    counted: Callable[[int], None] = lambda n: None,
) -> int:
    """Index the records of a session's log past its progress; returns the rows added."""
    added, _ = index_session_part(conn, home, session, max_class, counted, Part())
    return added


def one_part() -> Part:
    """The bounds of one part of index work (the writer is held no longer than this)."""
    return Part(PART_RECORDS, PART_BYTES, PART_SECONDS)


def index_session_part(
    conn: sqlite3.Connection,
    home: Home,
    session: str,
    settings: str | Settings,
    counted: Callable[[int], None] = lambda n: None,
    part: Part | None = None,
    kept: labelkept.Label | None = None,
) -> tuple[int, bool]:
    """Index at most a part of a session's log past its progress: (rows added, read to the end).

    Writes nothing when the log has nothing new (its progress row aside, for a log never seen).
    kept: the label the index this one replaces held for the log (a reindex's build): a log
    whose reading ends laxer than it, or than memoryd's journal says, is read again at it.
    """
    settings = _settings(settings)
    part = part or one_part()
    path = home.session_log(session)
    name = log_name(session)
    saved = load_state(conn, name)
    # A log read again starts from the label memoryd had seen of the session (labelkept.py).
    state = saved or labelkept.start(conn, home, session, name)
    file = file_of(path)  # before the read: a file put there meanwhile is seen next time
    # A log read again is paired with its old rows a part at a time and put in their place at
    # the end (reread.py): recall keeps finding the old reading until then.
    again = reread.under_way(conn, session)
    why = None
    if again is not None and (again.state.file != file or not _still_valid(path, again.state)):
        # Changed again meanwhile: read from its start anew, whatever the state saved says (the
        # file now may have the inode the old reading's had, freed and given out again).
        why = "changed again while it was read again"
        again = None
    if again is None and why is None:
        if state.bytes and state.file is not None and state.file != file:
            # A copy or move of the home (cp -a) gives the log a new inode and not a byte more:
            # read on when every byte before the offset is the one read (logprefix.py).
            if not _moved(home, name, path, state):
                why = "is another file than was read"
        elif state.bytes and not _still_valid(path, state):
            why = f"changed before byte {state.bytes}"
    if again is None and why is not None:
        restart = labelkept.again(home, session, state, why)
        restart.file = file
        again = reread.begin(conn, session, restart)
    if again is not None:
        return _read_again(conn, home, session, settings, counted, part, kept, again)
    before = state.bytes
    added = insert_rows(
        conn,
        _kept(session_rows(path, session, state, settings, counted, part), home, session, settings),
    )
    # Asked once a read reaches the log's end having read something (the journal's labels are
    # kept in memory and follow its appends: journallabels.py).
    ended = part.done and (state.bytes != before or not before)
    floor = labelkept.floor(home, session, state, kept) if ended else None
    if floor is not None:  # an altered log: every row at the label memoryd had seen
        added = _at_floor(conn, session, settings, floor, added)
        state.klass, state.untrusted = floor
    # A log kept without a digest of its bytes read (an older index) has it taken once.
    undigested = state.bytes > 0 and state.prefix is None
    if (
        state.bytes != before
        or saved is None
        or state.file != file
        or floor is not None
        or undigested
    ):
        state.tail = _tail_hash(path, state.bytes)
        state.prefix = logprefix.extend(path, state.prefix, before, state.bytes)
        state.file = file
        save_state(conn, name, state)
    return added, part.done


def _at_floor(
    conn: sqlite3.Connection, session: str, settings: Settings, floor: labelkept.Label, added: int
) -> int:
    """Every row of the session at floor, in the caller's transaction, as reading the log again
    from its start at floor gives them: floor is at least every label the log gave, so each record
    gets floor, and none is indexed when floor is above max_class. Returns the rows added less
    those deleted."""
    if CLASS_RANK[floor[0]] > CLASS_RANK[settings.max_class]:
        _delete_rows(conn, "kind = 'session' AND session = ?", (session,))
        return 0
    conn.execute(
        "UPDATE sources SET class = ?, untrusted = ? WHERE kind = 'session' AND session = ?",
        (floor[0], int(floor[1]), session),
    )
    return added


def _read_again(
    conn: sqlite3.Connection,
    home: Home,
    session: str,
    settings: Settings,
    counted: Callable[[int], None],
    part: Part,
    kept: labelkept.Label | None,
    again: reread.Reading,
) -> tuple[int, bool]:
    """One part of a log's reading again from its start (reread.py): paired with the old rows
    and staged, and at the log's end put in their place in this transaction, every row at the
    floor's label when memoryd had seen the session stricter than the log now shows."""
    path = home.session_log(session)
    state = again.state
    rows = session_rows(path, session, state, settings, counted, part)
    reread.pair(conn, session, again, _kept(rows, home, session, settings))
    state.tail = _tail_hash(path, state.bytes)
    if not part.done:
        reread.keep(conn, session, again)
        return 0, False
    floor = labelkept.floor(home, session, state, kept)
    added = reread.swap(conn, session, again, lambda rows: _kept(rows, home, session, settings))
    if floor is not None:
        added = _at_floor(conn, session, settings, floor, added)
        state.klass, state.untrusted = floor
    state.prefix = logprefix.extend(path, None, 0, state.bytes)  # one read of the log
    save_state(conn, log_name(session), state)
    reread.end(conn, session)
    return added, True


def _settings(value: str | Settings) -> Settings:
    """Settings from a max_class alone (the callers and tests that only set that) or as given."""
    return Settings(max_class=value) if isinstance(value, str) else value


def index_notes(
    conn: sqlite3.Connection, home: Home, max_class: str | Settings, own_from: str | None = None
) -> int:
    """Index all of notes.md past its progress in the caller's transaction; returns the rows
    added. memoryd's own catch-up reads it a part at a time (notesparts.py, which says when
    notes.md is read again from its start)."""
    from memoryd.index import notesparts  # it builds on this module's reading of logs

    return notesparts.index_notes(conn, home, max_class, own_from)


__all__ = [
    "NEXT_AFTER",
    "RECORD_BYTES",
    "_insert_batch",
    "log_problem",
    "Part",
    "Settings",
    "cap_text",
    "describe_stamp",
    "read_stamp",
    "write_stamp",
]
