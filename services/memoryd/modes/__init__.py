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

Each mode is a registry.Mode, kept by name (registry.py); the functions here, and the hooks
(modehooks) named here, are what the index and the indexer call, and they ask the mode recorded in
the index itself (moderecord), so the same code serves a reindex's new file and the live one. The
part's rows are read by fillrows, the old tables set aside and removed by setaside; the tunables
that bound them are kept here, read at each call.
"""

import logging
import os
import sqlite3

from memoryd.modes import builtin, fillrows, registry, setaside, spec, stale
from memoryd.modes.modehooks import carry_over, rows_added, rows_deleted
from memoryd.modes.moderecord import (
    ASIDE,
    FILL,
    FILL_TABLE,
    MODE_TABLE,
    filling,
    recorded,
)
from memoryd.modes.moderecord import aside as _aside
from memoryd.modes.moderecord import exists as _exists
from memoryd.modes.moderecord import objects as _objects
from memoryd.modes.moderecord import whole as _whole
from proto.plural import counted

__all__ = [
    "ASIDE",
    "DROP_BYTES",
    "FILL",
    "FILL_BATCH",
    "FILL_TABLE",
    "FILL_TEXT",
    "FTS5_ROWS",
    "MODE_TABLE",
    "MODES",
    "built",
    "built_so_far",
    "carry_over",
    "drop_part",
    "filling",
    "prepare",
    "prepare_part",
    "prepared",
    "recorded",
    "remove_set_aside",
    "renewing",
    "rows_added",
    "rows_deleted",
]

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
# Rows read at a time when a mode's tables are built from the spec's; a part (prepare_part) too.
FILL_BATCH = 5_000
# ... and at most this many characters of their text (at least one row): a part of short rows
# ends at FILL_BATCH, one of long records (tool outputs up to max_record_bytes) here, so that a
# part holds the writer a fraction of a second whatever the rows' size (context tokenizes about
# 4 MB of text a second: a part of 5,000 records of 24 KB took 30 s).
FILL_TEXT = 1_000_000
# The bytes of the tables set aside that a part removes (setaside.remove_some): a DROP of them in
# one job zeroes every page they held (secure_delete), about a minute at a million records.
DROP_BYTES = 8_000_000
# FTS5's tables of a virtual table's rows, set aside with it; its _config (a row or two) goes
# with the DROP, which reads it.
FTS5_ROWS = ("data", "idx", "content", "docsize")


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


def _fill(conn: sqlite3.Connection, add: registry.Fill, last: int = 0) -> int:
    """Feed every row of the spec's tables after rowid last to add (a mode's rows_added, or what
    fills the tables it renews), in rowid order; returns how many."""
    count = 0
    while True:
        last, fed = _batch(conn, add, last)
        if not fed:
            return count
        count += fed


def _part(conn: sqlite3.Connection, last: int) -> list[tuple]:
    """The rows after rowid last, up to FILL_BATCH of them and FILL_TEXT characters of text."""
    return fillrows.part(conn, last, FILL_BATCH, FILL_TEXT)


def _beyond_part(conn: sqlite3.Connection, last: int) -> bool:
    """Whether more than one part (FILL_BATCH rows, FILL_TEXT characters) lies after last."""
    return fillrows.beyond_part(conn, last, FILL_BATCH, FILL_TEXT)


def _set_aside(conn: sqlite3.Connection) -> None:
    """The old mode's tables set aside, FTS5_ROWS's with a virtual table (setaside)."""
    setaside.set_aside(conn, FTS5_ROWS)


def remove_set_aside(conn: sqlite3.Connection) -> bool:
    """One bounded step (_remove_some) of the removal of the tables a switch set aside, for a
    forget, whose text their rows may hold: False when none is left."""
    return _remove_some(conn)


def _remove_some(conn: sqlite3.Connection) -> bool:
    """One bounded step of the removal of the tables set aside: DROP_BYTES of a table's rows
    deleted, or a table found empty dropped (setaside). False when none is left."""
    return setaside.remove_some(conn, DROP_BYTES, FILL_BATCH)


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


def built(done: str | None) -> None:
    """Log what prepare() did, once it stands."""
    if done is not None:
        log.info("%s", done)
