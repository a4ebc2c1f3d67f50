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

The functions here run inside the caller's transaction and never commit.
"""

import hashlib
import logging
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from memoryd import modes
from memoryd.data import matching
from memoryd.home import Home, open_read
from memoryd.index import carryfile, labelkept, logprefix, reread
from memoryd.index.sessionrows import LogState, Part, Row, session_rows
from memoryd.index.settings import (
    RECORD_BYTES,
    Settings,
    cap_text,
    describe_stamp,
    read_stamp,
    write_stamp,
)
from memoryd.journal import forgotten, keptout
from memoryd.search.schema import DELETIONS_PRAGMA, OPTIONAL_TABLES, SCHEMA, TABLES
from proto.files import refuse, what_stands
from proto.labels import CLASS_RANK

log = logging.getLogger(__name__)

# One part of a catch-up: at most this long reading, this many records, this many bytes of log.
PART_SECONDS = 0.2
PART_RECORDS = 50_000
PART_BYTES = 16 << 20
NOTES_LOG = "memory/notes.md"
NOTE_KINDS = ("noted", "moved", "dropped")
# How many bytes before a log's indexed offset the tail hash covers (a rewritten log is caught).
TAIL_HASH_BYTES = 256
# What notes.md's tail hash covers: with its stat (index_notes), what tells memoryd's own append,
# which the index goes on from, from anything else, while a write costs the same at a million
# notes as at ten.
NOTES_WINDOW = 65_536
BATCH = 20_000


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


def log_problem(home: Home, session: str, sessions: str | None = None) -> OSError | None:
    """Why a session's log cannot be indexed (FileNotFoundError when there is none), or None.
    Neither sessions/<id> nor its 0.jsonl may be a symbolic link: memoryd does not follow one.
    sessions: home.sessions as a string, when the caller asks of every session (two lstats a
    log, and no path objects: a home of 60,000 sessions is listed at every stats)."""
    base = os.fspath(home.sessions) if sessions is None else sessions
    folder = f"{base}/{session}"
    log = f"{folder}/0.jsonl"
    try:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            return refuse(folder, what_stands(st, folder=True))
        st = os.lstat(log)
        if not stat.S_ISREG(st.st_mode):
            return refuse(log, what_stands(st))
    except FileNotFoundError:
        return FileNotFoundError(f"no session {session}")
    except OSError as e:
        return e
    return None


def log_name(session: str) -> str:
    """The progress key of a session's log: its path relative to {home}."""
    return f"sessions/{session}/0.jsonl"


def file_of(path: Path, whole: bool = False) -> str | None:
    """Which file path is: its device and inode, and (whole) its size and times too; None when
    there is none. A session log only grows in place, so its inode says it is the file read; any
    change of notes.md shows in its size or times (ctime cannot be set back), and so does a change
    of its mode or owner alone, which the digest of its bytes tells apart (notesparts.py)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not whole:
        return f"{st.st_dev}:{st.st_ino}"
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _tail_hash(path: Path, offset: int, window: int | None = TAIL_HASH_BYTES) -> str:
    """The hash of the window bytes before offset (of all of them when window is None)."""
    start = 0 if window is None else max(0, offset - window)
    digest = hashlib.sha256()
    with open_read(path) as f:
        f.seek(start)
        left = offset - start
        while left > 0:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def load_state(conn: sqlite3.Connection, name: str) -> LogState | None:
    row = conn.execute(
        "SELECT p.records, o.bytes, o.class, o.untrusted, o.tail FROM progress p"
        " JOIN offsets o ON o.log = p.log WHERE p.log = ?",
        (name,),
    ).fetchone()
    if row is None:
        return None
    # The file read follows the hash in the tail column (an older index has the hash alone), and
    # for notes.md the digest of the bytes read follows the file (notesprefix.py).
    tail, _, rest = str(row[4]).partition(" ")
    file, _, prefix = rest.partition(" ")
    return LogState(row[0], row[1], row[2], bool(row[3]), tail, file or None, prefix or None)


def save_state(conn: sqlite3.Connection, name: str, state: LogState) -> None:
    tail = state.tail if state.file is None else f"{state.tail} {state.file}"
    if state.file is not None and state.prefix is not None:
        tail = f"{tail} {state.prefix}"
    conn.execute("INSERT OR REPLACE INTO progress VALUES (?, ?)", (name, state.records))
    conn.execute(
        "INSERT OR REPLACE INTO offsets VALUES (?, ?, ?, ?, ?)",
        (name, state.bytes, state.klass, int(state.untrusted), tail),
    )


def _still_valid(path: Path, state: LogState, window: int | None = TAIL_HASH_BYTES) -> bool:
    """True when the log still holds the bytes read so far, as far as the hash shows."""
    if os.path.getsize(path) < state.bytes:
        return False
    return _tail_hash(path, state.bytes, window) == state.tail


# The highest rowid in sources or hits (FTS5 finds its highest rowid without a scan).
NEXT_AFTER = (
    "SELECT max(coalesce((SELECT max(rowid) FROM sources), 0),"
    " coalesce((SELECT rowid FROM hits ORDER BY rowid DESC LIMIT 1), 0))"
)


def insert_rows(conn: sqlite3.Connection, rows: Iterable[Row]) -> int:
    """Add rows to sources and hits under the same rowids, in batches; returns how many. The new
    rowids lie above both tables' (a sources row deleted by hand leaves its hits row behind)."""
    (rowid,) = conn.execute(NEXT_AFTER).fetchone()
    first = rowid + 1
    sources: list[tuple] = []
    texts: list[tuple[int, str]] = []
    for row in rows:
        rowid += 1
        sources.append((rowid, *row[:8]))
        texts.append((rowid, row[8]))
        if len(sources) >= BATCH:
            _insert_batch(conn, sources, texts)
    _insert_batch(conn, sources, texts)
    return rowid + 1 - first


def _insert_batch(conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]) -> None:
    if not sources:
        return
    conn.executemany("INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", sources)
    conn.executemany("INSERT INTO hits (rowid, text) VALUES (?, ?)", texts)
    modes.rows_added(conn, sources, texts)  # recall modes: their tables follow
    carryfile.take(conn, [source[0] for source in sources])  # kept vectors (hybrid)
    sources.clear()
    texts.clear()


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


# The homes whose logs were found moved (another inode, the bytes read unchanged): said once each.
_MOVED_SAID: set[str] = set()


def _moved(home: Home, name: str, path: Path, state: LogState) -> bool:
    """Whether a log that is another file than was read (file_of) holds every byte read before
    the offset (logprefix.py): a home copied or moved, the index reads on from the offset. Said
    once a home, naming the first log found so, not once a log."""
    try:
        if os.path.getsize(path) < state.bytes:
            return False
    except OSError:
        return False
    if not logprefix.holds(path, state.prefix, state.bytes):
        return False
    root = os.fspath(home.root)
    if root not in _MOVED_SAID:
        _MOVED_SAID.add(root)
        log.info(
            "session logs of %s are other files than the index read, every byte it read the"
            " same (%s first): copied or moved (cp -a), each is read on from where the index"
            " stopped; said once for the home",
            root,
            name,
        )
    return True


def _kept(rows: Iterable[Row], home: Home, session: str, settings: Settings) -> Iterable[Row]:
    """rows less what the owner made memoryd forget, which is never indexed again. A row under a
    key forgotten.jsonl lists goes whatever its text when the forget listed no digest of what it
    took; else when it holds what was taken, cut at this cap or another (_forgotten_key): what a
    new log of the same session name says under that number is indexed."""
    skip, alone = forgotten.listed(home), forgotten.alone(home)
    if skip:
        cap = settings.max_record_bytes
        rows = (r for r in rows if not _forgotten_key(session, r, skip, alone, home, cap))
    texts = forgotten.digests(home)  # nor its text, in any record of any log
    if texts:
        most = settings.max_record_bytes
        rows = (r for r in rows if not matching.holds_forgotten(r[5], r[8], texts, most))
    return rows


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


def _forgotten_key(
    session: str, row: Row, listed: frozenset[str], alone: frozenset[str], home: Home, cap: int
) -> bool:
    """A row under a key forgotten.jsonl lists that its forget took (keptout.held_under_key),
    or that the cap cut: under a lower cap than the forget's, its digest is of no text taken."""
    key = forgotten.session_key(session, row[3])
    if key not in listed:
        return False
    if key in alone or len(row[8].encode("utf-8", "surrogatepass")) >= cap - 3:
        return True
    return keptout.held_under_key(row[5], row[8], forgotten.digests(home))


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
    "RECORD_BYTES",
    "Part",
    "Settings",
    "cap_text",
    "describe_stamp",
    "read_stamp",
    "write_stamp",
]
