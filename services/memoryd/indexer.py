"""Reading session logs and notes.md into the index (spec 6), one log at a time.

What is indexed: the content of user records, of assistant records that have content, and each
tool call as "name arguments"; never tool results, never reasoning. Each record carries the
session's label in force when it was written: the highest class of the tool results before it (at
least private), untrusted if any of them was. A record above max_class is not indexed. notes.md
entries carry the label their header gives.

Progress per log is the number of records read (spec 6's progress table) and, beside it in the
offsets table, the byte offset reached, the label in force there and a hash of the bytes just
before the offset (for notes.md, of all the bytes before it). Catching up seeks to the offset, so
it costs what the new records cost, not what the log is long; the hash tells a log that was
rewritten (notes.md edited by hand) from one that only grew, and a rewritten log is indexed again
from its start.

The functions here run inside the caller's transaction and never commit.
"""

import hashlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from memoryd import modes, notes
from memoryd.home import Home, check_entry, open_read
from proto.errors import RecordDamaged
from proto.labels import CLASS_RANK, higher_class
from proto.records import AssistantRecord, ToolResultRecord, UserRecord, read_records

log = logging.getLogger(__name__)

SCHEMA = (
    "CREATE VIRTUAL TABLE hits USING fts5(text, tokenize = 'unicode61')",
    "CREATE TABLE sources (rowid INTEGER PRIMARY KEY, kind TEXT, session TEXT, epoch INTEGER,"
    " record INTEGER, time TEXT, role TEXT, class TEXT, untrusted INTEGER)",
    "CREATE TABLE progress (log TEXT PRIMARY KEY, records INTEGER)",
    "CREATE TABLE offsets (log TEXT PRIMARY KEY, bytes INTEGER, class TEXT, untrusted INTEGER,"
    " tail TEXT)",
)
TABLES = ("hits", "sources", "progress", "offsets")
NOTES_LOG = "memory/notes.md"
NOTE_KINDS = ("noted", "moved", "dropped")
# How many bytes before the offset the tail hash covers.
TAIL_BYTES = 256
# The owner may edit notes.md by hand. A hash of the last 64 KiB read catches any edit that
# changes the length of what came before (everything after it shifts) and any edit near the end,
# while a write costs the same at a million notes as at ten; an in-place edit of the same length
# further back waits for the next reindex.
NOTES_WINDOW = 65_536
BATCH = 20_000

Row = tuple  # (kind, session, epoch, record, time, role, class, untrusted, text)


def create_schema(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """What is wrong with an index's tables, or None when they are exactly ours."""
    found = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    for name, statement in zip(TABLES, SCHEMA, strict=True):
        if found.get(name) != statement:
            return f"table {name} is missing or has another definition"
    return None


@dataclass
class LogState:
    """How far one log has been read, and the session's label at that point."""

    records: int = 0
    bytes: int = 0
    klass: str = "private"
    untrusted: bool = False
    tail: str = hashlib.sha256(b"").hexdigest()


def log_problem(home: Home, session: str) -> OSError | None:
    """Why a session's log cannot be indexed (FileNotFoundError when there is none), or None.
    Neither sessions/<id> nor its 0.jsonl may be a symbolic link: memoryd does not follow one."""
    folder = home.sessions / session
    try:
        check_entry(folder, folder=True)
        check_entry(home.session_log(session))
        if not folder.is_dir() or not home.session_log(session).is_file():
            raise FileNotFoundError(f"no session {session}")
    except OSError as e:
        return e
    return None


def log_name(session: str) -> str:
    """The progress key of a session's log: its path relative to {home}."""
    return f"sessions/{session}/0.jsonl"


def _tail_hash(path: Path, offset: int, window: int | None = TAIL_BYTES) -> str:
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
    return LogState(row[0], row[1], row[2], bool(row[3]), row[4])


def save_state(conn: sqlite3.Connection, name: str, state: LogState) -> None:
    conn.execute("INSERT OR REPLACE INTO progress VALUES (?, ?)", (name, state.records))
    conn.execute(
        "INSERT OR REPLACE INTO offsets VALUES (?, ?, ?, ?, ?)",
        (name, state.bytes, state.klass, int(state.untrusted), state.tail),
    )


def _still_valid(path: Path, state: LogState, window: int | None = TAIL_BYTES) -> bool:
    """True when the log still holds the bytes read so far, as far as the hash shows."""
    if os.path.getsize(path) < state.bytes:
        return False
    return _tail_hash(path, state.bytes, window) == state.tail


def insert_rows(conn: sqlite3.Connection, rows: Iterable[Row]) -> int:
    """Add rows to sources and hits under the same rowids, in batches; returns how many."""
    (rowid,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM sources").fetchone()
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
    conn.executemany("INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", sources)
    conn.executemany("INSERT INTO hits (rowid, text) VALUES (?, ?)", texts)
    modes.rows_added(conn, sources, texts)  # recall modes (issue 15): their tables follow
    sources.clear()
    texts.clear()


def _delete_rows(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    modes.rows_deleted(conn, where, params)  # recall modes (issue 15): their tables follow
    conn.execute(
        f"DELETE FROM hits WHERE rowid IN (SELECT rowid FROM sources WHERE {where})", params
    )  # noqa: S608
    conn.execute(f"DELETE FROM sources WHERE {where}", params)  # noqa: S608


def _session_rows(
    path: Path, session: str, state: LogState, max_class: str, counted: Callable[[int], None]
) -> Iterable[Row]:
    """The rows of a session log's records past state, advancing state as records are read.

    Stops at the first damaged record with a log line naming the log: the records before it are
    indexed, and state stays before it, so each catch-up tries again from there.
    """
    limit = CLASS_RANK[max_class]
    number = state.records
    try:
        for line in read_records(path, state.bytes, state.records):
            record = line.record
            if isinstance(record, ToolResultRecord):
                state.klass = higher_class(state.klass, record.klass)
                state.untrusted = state.untrusted or record.untrusted
            elif CLASS_RANK[state.klass] <= limit:
                label = (state.klass, int(state.untrusted))
                if isinstance(record, UserRecord):
                    if record.content:
                        yield (
                            "session",
                            session,
                            0,
                            line.number,
                            record.time,
                            "user",
                            *label,
                            record.content,
                        )
                elif isinstance(record, AssistantRecord):
                    if record.content:
                        yield (
                            "session",
                            session,
                            0,
                            line.number,
                            record.time,
                            "assistant",
                            *label,
                            record.content,
                        )
                    for call in record.tool_calls:
                        text = f"{call.name} {call.arguments}"
                        yield (
                            "session",
                            session,
                            0,
                            line.number,
                            record.time,
                            "call",
                            *label,
                            text,
                        )
            state.records = line.number + 1
            state.bytes = line.end
            number = state.records
            counted(1)
    except RecordDamaged as damage:
        log.warning("session log %s: skipped from record %d: %s", path, number, damage)
    except (OSError, UnicodeError) as error:
        log.warning("session log %s: skipped from record %d: %s", path, number, error)


def index_session(
    conn: sqlite3.Connection,
    home: Home,
    session: str,
    max_class: str,
    counted: Callable[[int], None] = lambda n: None,
) -> int:
    """Index the records of a session's log past its progress; returns the rows added."""
    path = home.session_log(session)
    name = log_name(session)
    state = load_state(conn, name) or LogState()
    if state.bytes and not _still_valid(path, state):
        log.warning("session log %s changed before byte %d: indexing it again", path, state.bytes)
        _delete_rows(conn, "kind = 'session' AND session = ?", (session,))
        state = LogState()
    before = state.bytes
    added = insert_rows(conn, _session_rows(path, session, state, max_class, counted))
    if state.bytes != before or load_state(conn, name) is None:
        state.tail = _tail_hash(path, state.bytes)
        save_state(conn, name, state)
    return added


def index_notes(conn: sqlite3.Connection, home: Home, max_class: str) -> int:
    """Index the notes.md entries past its progress; returns the rows added."""
    path = home.memory_file("notes.md")
    state = load_state(conn, NOTES_LOG) or LogState()
    exists = os.path.lexists(path)
    if state.bytes and (not exists or not _still_valid(path, state, NOTES_WINDOW)):
        log.warning("notes %s changed before byte %d: indexing it again", path, state.bytes)
        _delete_rows(conn, "kind IN ('noted', 'moved', 'dropped')", ())
        state = LogState()
    if not exists:
        save_state(conn, NOTES_LOG, state)
        return 0
    with open_read(path) as f:
        f.seek(state.bytes)
        data = f.read()
    # A last line without its newline is still being written.
    data = data[: data.rfind(b"\n") + 1]
    entries = notes.parse(data, state.bytes, state.records)
    if state.bytes and data and (not entries or entries[0].start != state.bytes):
        # Text past the offset that comes before any header belongs to the last entry already
        # indexed (a torn append, an owner's added line): index notes.md again from the start,
        # as a reindex would read it.
        log.warning(
            "notes %s: text after byte %d continues an entry; indexing it again", path, state.bytes
        )
        _delete_rows(conn, "kind IN ('noted', 'moved', 'dropped')", ())
        save_state(conn, NOTES_LOG, LogState())
        return index_notes(conn, home, max_class)
    limit = CLASS_RANK[max_class]
    rows = [
        (e.kind, e.session, 0, e.number, e.time, e.source, e.klass, int(e.untrusted), e.text)
        for e in entries
        if e.text and CLASS_RANK[e.klass] <= limit
    ]
    added = insert_rows(conn, rows)
    state.records += len(entries)
    state.bytes += len(data)
    state.tail = _tail_hash(path, state.bytes, NOTES_WINDOW)
    save_state(conn, NOTES_LOG, state)
    return added
