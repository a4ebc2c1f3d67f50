"""Recall modes beyond the spec (design section 8): `[recall] mode` = spec | context | hybrid.

spec is the spec's recall and index, untouched: its index holds exactly the spec's tables. Another
mode adds its own tables beside them, all derived from the spec's rows, and records its name in
recall_mode; at open, an index whose recorded mode differs from the configured one has the old
mode's tables dropped and the new mode's built from the spec's rows (one log line), so a switch
never needs the session logs again and switching back to spec leaves the spec's schema exactly.
An index whose mode is the configured one but some of whose mode tables are marked stale (a format
step changed only them: stale.py) has those built again from the rows, its other tables kept.
A changed mode's tables over more rows than a part may instead be built a part at a time
(prepare_part), each part its own transaction, so that the writer is free between parts; a record
(FILL) says how far, the mode's tables serve recall only once it is gone, and the hooks keep the
parts made equal to what a build in one go gives while rows are added and deleted between parts.
Such a build sets the old mode's tables aside under names no mode reads (ASIDE) and empties them a
bounded batch a part before it feeds rows; whatever builds in one go drops what is left of them.
A switch to spec is made in parts the same way (drop_part): the old tables set aside by the first,
emptied by the next ones, the index spec's from the first on.

Each mode is a registry.Mode, kept by name (registry.py); the functions here are what the index
and the indexer call, and they ask the mode recorded in the index itself, so the same code serves
a reindex's new file and the live one.
"""

import logging
import os
import sqlite3
from pathlib import Path

from memoryd.modes import builtin, registry, spec, stale
from proto.plural import counted

log = logging.getLogger(__name__)

# memoryd runs several recalls at once on 2 cores beside other work: one BLAS and one tokenizer
# thread per call does better than threads that spin against each other (a 100,000-row
# matrix-vector product measured 15 ms single-threaded, 66 ms with the default threads, on a busy
# machine). Set here, before any module of this package imports numpy (only hybrid's do).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

for _mode in (spec.Spec(), builtin.Context(), builtin.Hybrid()):
    registry.register(_mode)

MODES = registry.names()
MODE_TABLE = "CREATE TABLE recall_mode (mode TEXT, generation INTEGER)"
# Rows read at a time when a mode's tables are built from the spec's; a part (prepare_part) too.
FILL_BATCH = 5_000
# ... and at most this many characters of their text (at least one row): a part of short rows
# ends at FILL_BATCH, one of long records (tool outputs up to max_record_bytes) here, so that a
# part holds the writer a fraction of a second whatever the rows' size (context tokenizes about
# 4 MB of text a second: a part of 5,000 records of 24 KB took 30 s).
FILL_TEXT = 1_000_000
# While a changed mode's tables are built a part at a time: the last rowid given to the mode, how
# many rows were, how many the index held when the build began, and what the index was before
# (for the log line). While it stands the mode's tables are not whole.
FILL = "recall_mode_fill"
FILL_TABLE = f"CREATE TABLE {FILL} (last INTEGER, done INTEGER, total INTEGER, since TEXT)"
# The old mode's tables, renamed aside by the first part of a build (ASIDE, a number, _, the old
# name) and emptied by the next parts a bounded batch at a time (DROP_BYTES of their rows), each
# dropped once empty: a DROP of them in one job zeroes every page they held (secure_delete),
# about a minute at a million records. Their names are no mode's: they never serve recall.
ASIDE = "recall_mode_old"
DROP_BYTES = 8_000_000
# FTS5's tables of a virtual table's rows, set aside with it; its _config (a row or two) goes
# with the DROP, which reads it.
FTS5_ROWS = ("data", "idx", "content", "docsize")


def _exists(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return found is not None


def recorded(conn: sqlite3.Connection) -> str:
    """The mode the index was built for: spec when it has no recall_mode table."""
    if not _exists(conn, "recall_mode"):
        return "spec"
    row = conn.execute("SELECT mode FROM recall_mode").fetchone()
    return "?" if row is None else str(row[0])


def _recorded_mode(conn: sqlite3.Connection) -> registry.Mode | None:
    """The recorded mode, None for spec or a name no mode has (its tables are not kept)."""
    name = recorded(conn)
    if name == "spec" or name not in registry.names():
        return None
    return registry.get(name)


def _objects(mode: registry.Mode) -> tuple[str, ...]:
    return () if not mode.objects else ("recall_mode", *mode.objects)


def _drop_all(conn: sqlite3.Connection) -> None:
    for mode in registry.every():
        mode.drop(conn)
    for name in _aside(conn):
        conn.execute(f'DROP TABLE main."{name}"')
    conn.execute("DROP TABLE IF EXISTS recall_mode")
    conn.execute(f"DROP TABLE IF EXISTS {FILL}")
    conn.execute(stale.DROP)


def _batch(conn: sqlite3.Connection, add: registry.Fill, last: int) -> tuple[int, int]:
    """Feed the rows of the spec's tables after rowid last to add, in rowid order, a part's
    worth (_part); the last rowid fed and how many (0: none was left)."""
    rows = _part(conn, last)
    if not rows:
        return last, 0
    add(conn, [row[:9] for row in rows], [(row[0], row[9]) for row in rows])
    return rows[-1][0], len(rows)


def _part(conn: sqlite3.Connection, last: int) -> list[tuple]:
    """The rows after rowid last, up to FILL_BATCH of them and FILL_TEXT characters of text (at
    least one row), read one at a time so that what is not taken is not read (sources first, by
    rowid: joined the other way SQLite reads every text of hits and sorts them, each part)."""
    cursor = conn.execute(
        "SELECT s.rowid, s.kind, s.session, s.epoch, s.record, s.time, s.role, s.class,"
        " s.untrusted, h.text FROM sources s CROSS JOIN hits h ON h.rowid = s.rowid"
        " WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?",
        (last, FILL_BATCH),
    )
    rows: list[tuple] = []
    size = 0
    try:
        for row in cursor:
            rows.append(row)
            size += len(row[9] or "")
            if size >= FILL_TEXT:
                break
    finally:
        cursor.close()
    return rows


def _fill(conn: sqlite3.Connection, add: registry.Fill, last: int = 0) -> int:
    """Feed every row of the spec's tables after rowid last to add (a mode's rows_added, or what
    fills the tables it renews), in rowid order; returns how many."""
    count = 0
    while True:
        last, fed = _batch(conn, add, last)
        if not fed:
            return count
        count += fed


def filling(conn: sqlite3.Connection) -> tuple[int, int, int] | None:
    """While the mode's tables are built a part at a time (prepare_part): the last rowid given
    to the mode, the rows given, and about how many there are (those held when it began); None
    when they are not."""
    if not _exists(conn, FILL):
        return None
    row = conn.execute(f"SELECT last, done, total FROM {FILL}").fetchone()  # noqa: S608
    if row is None:  # an emptied record: the parts start over, from the first row
        return (0, 0, 0)
    return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0))


def built_so_far(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(rows built, about how many in all) while the mode's tables are built a part at a time."""
    at = filling(conn)
    return None if at is None else (at[1], max(at[1], at[2]))


def prepared(conn: sqlite3.Connection, mode: str) -> bool:
    """Whether the index's mode tables are those of mode already (prepare has nothing to do)."""
    wanted = registry.get(mode)
    if stale.held(conn) or _exists(conn, FILL) or _aside(conn):
        return False
    return recorded(conn) == mode and all(_exists(conn, name) for name in _objects(wanted))


def renewing(conn: sqlite3.Connection, mode: str) -> str | None:
    """The tables prepare() builds again from the rows, keeping the mode's others, and why (in
    words, stale.said), when the index holds mode with some of its tables marked stale; None when
    prepare has nothing to do or builds the mode whole (a change of mode)."""
    marks = stale.marked(conn)
    if not marks or recorded(conn) != mode or _exists(conn, FILL):
        return None  # a build in parts not finished: it is built whole, anew
    return stale.said(marks)


def prepare(
    conn: sqlite3.Connection, mode: str, path: object = "index", fresh: bool = False
) -> str | None:
    """Make the index's mode tables those of mode, inside the caller's transaction; what was
    done when they had to be (re)built, for the caller to say with built() once its transaction
    has committed (a build that then fails to commit was not made), else None. fresh: the file
    was made just now (a new home, a damaged index started anew, a reindex's file), so it was
    never in another mode: the spec's schema is only where every index starts. A build begun a
    part at a time (prepare_part) is finished from its last part."""
    if prepared(conn, mode):
        return None
    wanted, was = registry.get(mode), recorded(conn)
    if (at := _going_on(conn, mode)) is not None:
        return _finish(conn, wanted, path, at)
    marks = stale.marked(conn)
    if was == mode and marks and not _exists(conn, FILL) and _whole(conn, wanted):
        # Only the tables a format step changed: the others (hybrid's vectors) are kept.
        add = wanted.renew(conn, frozenset(marks))
        if add is not None:
            conn.execute(stale.DROP)
            count = _fill(conn, add)
            built = f"built from {counted(count, 'row')}"
            return f"index {path}: recall mode {mode}: {stale.said(marks)}: {built}"
    _drop_all(conn)
    since = "a new file" if fresh else f"was {was}"
    if not wanted.objects:
        return f"index {path}: recall mode {mode} ({since}): its tables dropped"
    conn.execute(MODE_TABLE)
    conn.execute("INSERT INTO recall_mode VALUES (?, 0)", (mode,))
    wanted.create(conn)
    count = _fill(conn, wanted.rows_added)
    return f"index {path}: recall mode {mode} ({since}): built from {counted(count, 'row')}"


def _whole(conn: sqlite3.Connection, mode: registry.Mode) -> bool:
    return all(_exists(conn, name) for name in _objects(mode))


def _going_on(conn: sqlite3.Connection, mode: str) -> tuple[int, int, int] | None:
    """How far a build of mode a part at a time got, when it can be gone on with: its tables all
    there and none marked stale (a format step since: built whole again); else None."""
    at = filling(conn)
    if at is None or recorded(conn) != mode or stale.held(conn):
        return None
    return at if _whole(conn, registry.get(mode)) else None


def _finish(
    conn: sqlite3.Connection, wanted: registry.Mode, path: object, at: tuple[int, int, int]
) -> str:
    """The rest of a build begun a part at a time, and its record dropped: the tables whole."""
    count = at[1] + _fill(conn, wanted.rows_added, at[0])
    row = conn.execute(f"SELECT since FROM {FILL}").fetchone()  # noqa: S608
    conn.execute(f"DROP TABLE {FILL}")
    for name in _aside(conn):
        conn.execute(f'DROP TABLE main."{name}"')
    since = str(row[0]) if row is not None and row[0] else "was spec"
    return f"index {path}: recall mode {wanted.name} ({since}): built from {counted(count, 'row')}"


def prepare_part(
    conn: sqlite3.Connection, mode: str, fresh: bool = False
) -> tuple[int, int] | None:
    """One part of a changed mode's build, inside the caller's transaction, so that the writer is
    held for a part at a time and a stop or a kill between parts keeps the parts made: the first
    sets the old mode's tables aside (_set_aside) and creates the new one's empty (with the FILL
    record); the next ones remove a bounded batch of what was set aside (_remove_some), then feed
    the rows after the last part's, up to FILL_BATCH rows and FILL_TEXT characters of text.
    Returns (rows built, about how many in all); None when what is left is prepare()'s, in one go:
    no row left to feed (the record dropped), a build of no more than a part, nothing to do, or a
    renewal of some of the mode's tables (a format step's, rare: built in one go)."""
    at = _going_on(conn, mode)
    if at is None:
        if prepared(conn, mode) or renewing(conn, mode) is not None:
            return None
        if not registry.get(mode).objects or not _beyond_part(conn, 0):
            return None  # a mode of no tables (spec) is drop_part's
        return _begin(conn, mode, fresh)
    if _remove_some(conn):
        return at[1], max(at[1], at[2])
    last, fed = _batch(conn, registry.get(mode).rows_added, at[0])
    if not fed:
        return None
    conn.execute(f"UPDATE {FILL} SET last = ?, done = done + ?", (last, fed))  # noqa: S608
    return at[1] + fed, max(at[1] + fed, at[2])


def drop_part(conn: sqlite3.Connection) -> tuple[str, int] | None:
    """One part of a switch to spec (a mode of no tables), inside the caller's transaction, as a
    changed mode's build is made (prepare_part), so that the writer is never held for the DROP of
    the old mode's tables, which zeroes every page they held (secure_delete): the first part sets
    them aside (_set_aside; the recall_mode record dropped, so the index is spec's at once and
    recall by spec's search is exact), each next one removes a bounded batch of them
    (_remove_some). Returns what the index was before the part (its recorded mode; "spec" once
    set aside) and how many tables are left set aside; None once none is: the spec's schema."""
    was = recorded(conn)
    if was != "spec" or _exists(conn, FILL) or stale.held(conn):
        _set_aside(conn)
    elif not _remove_some(conn):
        return None
    return was, len(_aside(conn))


def _beyond_part(conn: sqlite3.Connection, last: int) -> bool:
    """Whether more than one part (FILL_BATCH rows, FILL_TEXT characters) lies after rowid
    last: reads the lengths of a part's rows at most."""
    cursor = conn.execute(
        "SELECT length(h.text) FROM sources s CROSS JOIN hits h ON h.rowid = s.rowid"
        " WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?",
        (last, FILL_BATCH + 1),
    )
    count = size = 0
    try:
        for (length,) in cursor:
            if count == FILL_BATCH or size >= FILL_TEXT:
                return True
            count += 1
            size += int(length or 0)
    finally:
        cursor.close()
    return False


def _begin(conn: sqlite3.Connection, mode: str, fresh: bool) -> tuple[int, int]:
    """The first part: the old mode's tables dropped, the new one's created empty and recorded,
    with the FILL record that says they are not whole yet."""
    was = recorded(conn)
    _set_aside(conn)
    conn.execute(MODE_TABLE)
    conn.execute("INSERT INTO recall_mode VALUES (?, 0)", (mode,))
    registry.get(mode).create(conn)
    (total,) = conn.execute("SELECT count(*) FROM sources").fetchone()
    since = "a new file" if fresh else f"was {was}"
    conn.execute(FILL_TABLE)
    conn.execute(f"INSERT INTO {FILL} VALUES (0, 0, ?, ?)", (total, since))  # noqa: S608
    return 0, int(total)


def _aside(conn: sqlite3.Connection) -> list[str]:
    """The tables set aside (_set_aside) and not removed yet."""
    rows = conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name GLOB ? ORDER BY name",
        (f"{ASIDE}[0-9]*_*",),
    )
    return [str(name) for (name,) in rows]


def _set_aside(conn: sqlite3.Connection) -> None:
    """The first part's removal of the old mode's tables (and of a build's left unfinished),
    bounded whatever their size: each table is renamed aside (a virtual table's rows with it, the
    table itself dropped empty) for the next parts to empty (_remove_some); an index on the
    spec's rows (context_sessions) is dropped. The record tables go."""
    number = 1 + max((_number(name) for name in _aside(conn)), default=0)
    for mode in registry.every():
        for name in mode.objects:
            kind = conn.execute(
                "SELECT type, sql FROM main.sqlite_master WHERE name = ?", (name,)
            ).fetchone()
            if kind is None:
                continue
            if kind[0] != "table":
                conn.execute(f'DROP INDEX main."{name}"')
            elif str(kind[1]).upper().startswith("CREATE VIRTUAL TABLE"):
                _virtual_aside(conn, name, f"{ASIDE}{number}_{name}")
            else:
                conn.execute(f'ALTER TABLE main."{name}" RENAME TO "{ASIDE}{number}_{name}"')
    conn.execute("DROP TABLE IF EXISTS main.recall_mode")
    conn.execute(f"DROP TABLE IF EXISTS main.{FILL}")
    conn.execute(stale.DROP)


def _number(name: str) -> int:
    digits = name[len(ASIDE) :].split("_", 1)[0]
    return int(digits) if digits.isdigit() else 0


def _virtual_aside(conn: sqlite3.Connection, name: str, aside: str) -> None:
    """An FTS5 table's rows renamed aside and the table dropped over empty ones (its structure
    record kept, which the DROP reads); a table that cannot be (another module) dropped whole."""
    conn.execute("SAVEPOINT aside")
    try:
        held = dict(
            conn.execute(
                "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' AND name IN"
                f" ({', '.join('?' * len(FTS5_ROWS))})",
                tuple(f"{name}_{suffix}" for suffix in FTS5_ROWS),
            ).fetchall()
        )
        for shadow, sql in held.items():
            conn.execute(f'ALTER TABLE main."{shadow}" RENAME TO "{aside}{shadow[len(name) :]}"')
            conn.execute(sql)
        if f"{name}_data" in held:
            conn.execute(
                f'INSERT INTO main."{name}_data" SELECT * FROM main."{aside}_data"'
                " WHERE id IN (1, 10)"
            )
        conn.execute(f'DROP TABLE main."{name}"')
    except sqlite3.Error:
        conn.execute("ROLLBACK TO aside")
        conn.execute(f'DROP TABLE main."{name}"')
    finally:
        conn.execute("RELEASE aside")


def remove_set_aside(conn: sqlite3.Connection) -> bool:
    """One bounded step (_remove_some) of the removal of the tables a switch set aside, for a
    forget, whose text their rows may hold: False when none is left."""
    return _remove_some(conn)


def _remove_some(conn: sqlite3.Connection) -> bool:
    """One bounded step of the removal of the tables set aside: DROP_BYTES of a table's rows
    deleted (each freed page zeroed), or a table found empty (or without rowids, FTS5's small
    _idx) dropped. False when none is left."""
    for name in _aside(conn):
        sql = conn.execute("SELECT sql FROM main.sqlite_master WHERE name = ?", (name,))
        if "WITHOUT ROWID" in str(sql.fetchone()[0]).upper():
            conn.execute(f'DROP TABLE main."{name}"')
            return True
        last = _rows_worth(conn, name)
        if last is None:
            conn.execute(f'DROP TABLE main."{name}"')
        else:
            conn.execute(f'DELETE FROM main."{name}" WHERE rowid <= ?', (last,))  # noqa: S608
        return True
    return False


def _rows_worth(conn: sqlite3.Connection, name: str) -> int | None:
    """The rowid up to which the first rows of the table hold DROP_BYTES (at least one row);
    None when it is empty."""
    columns = [str(row[1]) for row in conn.execute(f'PRAGMA main.table_info("{name}")')]
    size = " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in columns) or "0"
    cursor = conn.execute(
        f'SELECT rowid, {size} FROM main."{name}" ORDER BY rowid LIMIT ?',  # noqa: S608
        (FILL_BATCH,),
    )
    last, total = None, 0
    try:
        for rowid, length in cursor:
            last, total = rowid, total + int(length or 0)
            if total >= DROP_BYTES:
                break
    finally:
        cursor.close()
    return last


def built(done: str | None) -> None:
    """Log what prepare() did, once it stands."""
    if done is not None:
        log.info("%s", done)


def rows_added(conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]) -> None:
    """Hook: the indexer added these rows to sources and hits (same rowids)."""
    mode = _recorded_mode(conn)
    if mode is None or not sources:
        return
    if (at := filling(conn)) is not None:  # the rows after the last part: the parts feed them
        sources = [row for row in sources if row[0] <= at[0]]
        texts = [row for row in texts if row[0] <= at[0]]
        if not sources:
            return
    mode.rows_added(conn, sources, texts)


def rows_deleted(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    """Hook: the indexer is about to delete the sources rows matching where."""
    mode = _recorded_mode(conn)
    if mode is not None:
        mode.rows_deleted(conn, where, params)
        if (at := filling(conn)) is not None:
            _after_parts(conn, mode, at[0])


def _after_parts(conn: sqlite3.Connection, mode: registry.Mode, last: int) -> None:
    """Take out of the mode's tables the rows after the last part, which rows_deleted may have
    written (context writes the turns around deleted ones again, given a row or not): the next
    parts write them, once, as a build in one go would."""
    for name in mode.objects:
        kind = conn.execute("SELECT type FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        if kind is not None and kind[0] == "table":
            conn.execute(f"DELETE FROM {name} WHERE rowid > ?", (last,))  # noqa: S608


def carry_over(conn: sqlite3.Connection, old: Path) -> int:
    """Hook: a reindex built conn's file beside the index old; the mode copies from old what
    need not be computed again (hybrid: the vectors of unchanged rows). Returns how many rows."""
    mode = _recorded_mode(conn)
    return 0 if mode is None else mode.carry_over(conn, old)
