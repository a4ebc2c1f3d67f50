"""The vectors of an index rebuilt because its settings or format changed, kept for its new rows.

A changed stamp (settings.py: an upgrade that raises FORMAT, a new max_class) means the index is
built again from the logs, and in hybrid mode every row would be embedded again: about 7 minutes
per 100,000 records on 2 cores, while recall answers by words alone. A vector depends on nothing
but its row's own text, so the old file's vectors stay right for every row whose key (session,
kind, record, role) and text are unchanged: set_aside() moves the old file to CARRY_NAME beside the
new one, the writer attaches it (attach()), and each row the catch-up adds takes its vector from
there in the same transaction (hybrid_tables.rows_added), so the embedder computes only what is
new. The old file's rows are never read as rows: nothing of them is recalled.

While the file is there the embedder waits (hybrid.py), so that every vector is written in rising
rowid order; end() removes the file once the catch-up after the start is done, and raises the
generation once, since the rows left for the embedder lie below vectors already written. A forget
or a reindex ends it first: the old file holds the old rows' text, which a forget must not leave
anywhere. A start after a crash attaches what is still there and goes on.

Only the file this memoryd set aside or attached is its own (own()): the embedder waits for it,
and end() removes it. Anything else found at the name while memoryd runs (a folder, a file a
restore tool copied back) is not read: it is left as it is (it may be the owner's), and one line
says so, rather than failing every forget or keeping the embedder waiting for vectors that never
come.
"""

import contextlib
import logging
import os
import sqlite3
import stat
from pathlib import Path

from memoryd.home import FILE_MODE, fsync_dir
from memoryd.index import dbname
from memoryd.modes import hybrid_tables

log = logging.getLogger(__name__)

CARRY_NAME = hybrid_tables.CARRY_NAME
SCHEMA = "carry"  # the name it is attached under
_ATTACHED = "SELECT 1 FROM pragma_database_list WHERE name = 'carry'"
# Each new row takes the vector of the old row with its key and text (any one: the key is not
# unique when a record holds two identical tool calls, and their text is the same).
_TAKE = (
    "INSERT OR IGNORE INTO vectors SELECT n.rowid, min(ov.vector) FROM sources n"
    # CROSS JOIN keeps this order: the new rows by rowid, then the old rows of each key by
    # carry_key, then texts by rowid; left to itself the planner scans every old text.
    " CROSS JOIN carry.sources o CROSS JOIN carry.vectors ov"
    " CROSS JOIN hits nh CROSS JOIN carry.hits oh"
    " WHERE n.rowid BETWEEN ? AND ? AND o.session IS n.session AND o.record = n.record"
    " AND o.kind = n.kind AND o.role IS n.role AND ov.rowid = o.rowid"
    # What int8.unpack can read: anything else is embedded again.
    " AND typeof(ov.vector) = 'blob' AND length(ov.vector) IN (?, ?)"
    " AND nh.rowid = n.rowid AND oh.rowid = o.rowid AND oh.text = nh.text GROUP BY n.rowid"
)
_TAKEN = (
    "DELETE FROM vector_pending WHERE rowid BETWEEN ? AND ?"
    " AND rowid IN (SELECT rowid FROM vectors WHERE rowid BETWEEN ? AND ?)"
)


# The carry file this memoryd set aside or attached, by its path: its (device, inode).
_OWN: dict[str, tuple[int, int]] = {}
# What was found at a carry path and said once (path, device, inode, what it is).
_TOLD: set[tuple[str, int, int, str]] = set()


def carry_path(index_path: Path) -> Path:
    return index_path.with_name(CARRY_NAME)


def _identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of the regular file at path; None for anything else or nothing."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino) if stat.S_ISREG(found.st_mode) else None


def _claim(carry: Path) -> None:
    """The file at carry is memoryd's own: it set it aside, or attached it."""
    found = _identity(carry)
    if found is not None:
        _OWN[str(carry)] = found


def own(index_path: Path) -> bool:
    """Whether the entry at the carry name is the file this memoryd set aside or attached."""
    return _own(carry_path(index_path))


def _own(carry: Path) -> bool:
    mine = _OWN.get(str(carry))
    return mine is not None and _identity(carry) == mine


def set_aside(index_path: Path) -> bool:
    """Move the index at index_path (whole and readable: dbfile.damage said so) to CARRY_NAME
    when it holds vectors; False, leaving it where it is, when it holds none or cannot be moved
    (the caller removes it)."""
    carry = carry_path(index_path)
    try:
        conn = sqlite3.connect(index_path, isolation_level=None)
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors'").fetchone():
                return False
            if not conn.execute("SELECT 1 FROM vectors LIMIT 1").fetchone():
                return False
            # Its WAL goes into the file, which then stands alone under another name.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode = DELETE")
            conn.execute("CREATE INDEX IF NOT EXISTS carry_key ON sources(session, record)")
        finally:
            conn.close()
        _remove(carry)
        os.replace(index_path, carry)
        _claim(carry)
    except (sqlite3.Error, OSError) as error:
        log.warning(
            "index %s: its vectors cannot be kept (%s); all are computed again", index_path, error
        )
        return False
    # Moved: the old file is at the carry name whatever fails next, and its vectors are kept (the
    # caller must not go on as if it were still at index_path).
    try:
        os.chmod(carry, FILE_MODE)
        for suffix in ("-wal", "-shm"):  # emptied by the checkpoint: no stale one is left
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{index_path}{suffix}")
        fsync_dir(index_path.parent)
    except OSError as error:
        what = (
            "its folder could not be synced (a crash may bring the old file back: it is then"
            " rebuilt again)"
            if error.filename is None
            else f"{error.filename} could not be changed"
        )
        log.warning(
            "index %s: its vectors kept in %s, but %s: %s",
            index_path,
            carry,
            what,
            error.strerror or error,
        )
        return True
    log.info(
        "index %s: its vectors kept in %s for the rows whose text did not change", index_path, carry
    )
    return True


def attach(conn: sqlite3.Connection, index_path: Path) -> bool:
    """Attach the kept vectors to the writer conn (outside a transaction), if there are any."""
    carry = carry_path(index_path)
    if attached(conn):
        return True
    if not carry.is_file() or carry.is_symlink():
        return False
    try:
        dbname.attach(conn, carry, SCHEMA)
        problem = _shape_problem(conn)
        if problem is None:
            conn.execute("SELECT 1 FROM carry.vectors LIMIT 1").fetchall()
    except sqlite3.Error as error:
        problem = str(error)
    if problem is not None:
        log.warning(
            "index %s: the kept vectors in %s cannot be read (%s); they are computed again",
            index_path,
            carry,
            problem,
        )
        detach_and_remove(conn, index_path)
        return False
    _claim(carry)
    return True


# The columns take() reads, table by table: a file of another shape (planted, or from a memoryd
# whose index differs) is not used.
_COLUMNS = {
    "sources": {"session", "kind", "record", "role"},
    "hits": {"text"},
    "vectors": {"vector"},
}


def _shape_problem(conn: sqlite3.Connection) -> str | None:
    for table, wanted in _COLUMNS.items():
        found = conn.execute(
            "SELECT type FROM carry.sqlite_master WHERE name = ?", (table,)
        ).fetchone()
        if found is None or found[0] != "table":
            return f"it has no table {table}"
        # table is one of _COLUMNS' names, not a value read from anywhere.
        have = {row[1] for row in conn.execute(f"PRAGMA carry.table_info({table})")}  # noqa: S608
        if not wanted <= have:
            return f"its table {table} lacks {', '.join(sorted(wanted - have))}"
    return None


def take(conn: sqlite3.Connection, rowids: list[int]) -> int:
    """Inside the indexer's transaction: give the new rows rowids the kept vectors of the same
    key and text, and take them off the pending list. Returns how many were given."""
    if not rowids:
        return 0
    found = dbname.attached_file(conn, SCHEMA)
    if not found or not _own(Path(os.fsdecode(found))):
        return 0  # none, given up (below), or no longer at its name: end() detaches it
    from memoryd.modes import int8  # numpy: only hybrid attaches kept vectors

    low, high = min(rowids), max(rowids)
    before = conn.total_changes
    # A failure here must not fail the rows being indexed: the kept vectors only save time.
    conn.execute("SAVEPOINT carry_take")
    try:
        conn.execute(_TAKE, (low, high, int8.DIMENSIONS, int8.FLOAT_BYTES))
        given = conn.total_changes - before
        if given:
            conn.execute(_TAKEN, (low, high, low, high))
    except sqlite3.Error as error:
        conn.execute("ROLLBACK TO carry_take")
        conn.execute("RELEASE carry_take")
        log.warning(
            "index %s: the kept vectors cannot be read (%s); the rest are computed again",
            os.fsdecode(found),
            error,
        )
        # The embedder goes on at once, writing vectors below those given out: the matrix and
        # the ANN read it all again (as end() has them do). end() detaches the file.
        with contextlib.suppress(sqlite3.Error):
            conn.execute(hybrid_tables.RAISE_GENERATION)
        _remove_own(Path(os.fsdecode(found)))
        return 0
    conn.execute("RELEASE carry_take")
    return given


def attached(conn: sqlite3.Connection) -> bool:
    return conn.execute(_ATTACHED).fetchone() is not None


def waiting(index_path: Path) -> bool:
    """Whether kept vectors are still being given out (the embedder waits meanwhile): only
    while memoryd's own file is at the carry name, whatever else may be put there."""
    return own(index_path)


def end(conn: sqlite3.Connection | None, index_path: Path) -> bool:
    """Stop giving out kept vectors and remove their file (outside a transaction); the embedder
    then computes what is left. True when memoryd had one. Anything else at the carry name is
    left as it is, and said once (_left): memoryd gives out nothing from it, and it may be the
    owner's."""
    mine = own(index_path)
    held = conn is not None and attached(conn)
    if not (mine or held):
        _left(index_path)
        return False
    if (
        conn is not None
        and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'recall_mode'").fetchone()
    ):
        # The rows left pending lie below vectors given out: the matrix and ANN read it all again.
        with contextlib.suppress(sqlite3.Error):
            conn.execute(hybrid_tables.RAISE_GENERATION)
    if held and conn is not None:
        conn.execute("DETACH DATABASE carry")
    if mine:
        _remove_own(carry_path(index_path))
    else:
        _left(index_path)
    log.info(
        "index %s: the kept vectors were given out; the embedder computes the rest", index_path
    )
    return True


def _remove_own(carry: Path) -> None:
    """Remove memoryd's carry file: a failure (the old rows' text left) is raised."""
    _remove(carry)
    _OWN.pop(str(carry), None)
    with contextlib.suppress(OSError):
        fsync_dir(carry.parent)


def _left(index_path: Path) -> None:
    """Say once what stands at the carry name that memoryd did not set aside or attach: it is
    left as it is (it may be the owner's), and what the next start makes of it."""
    carry = carry_path(index_path)
    _OWN.pop(str(carry), None)
    try:
        found = os.lstat(carry)
    except OSError:  # nothing there (or index/ cannot be looked at: the index says so)
        return
    what = _what(found.st_mode)
    key = (str(carry), found.st_dev, found.st_ino, what)
    if key in _TOLD:
        return
    _TOLD.add(key)
    if what == "a file":
        then = (
            "the next start removes it, unless it holds vectors kept from a rebuilt index,"
            " which hybrid then takes"
        )
    else:
        then = "move it away: the next start refuses it"
    log.warning(
        "index %s: %s is %s that memoryd is not using: left as it is, and memoryd takes"
        " nothing from it; %s",
        index_path,
        carry,
        what,
        then,
    )


def _what(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a special file"


def detach_and_remove(conn: sqlite3.Connection | None, index_path: Path) -> None:
    if conn is not None and conn.execute(_ATTACHED).fetchone() is not None:
        conn.execute("DETACH DATABASE carry")
    _remove_own(carry_path(index_path))


def _remove(path: Path) -> None:
    """path and the journal files SQLite may have left beside it (dbfile.remove_database, which
    this module cannot import: dbfile reads the schema through the indexer, which calls take)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
