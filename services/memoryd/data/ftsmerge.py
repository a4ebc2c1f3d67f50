"""Merging a forgotten row's words out of the index's full-text term lists.

A delete leaves the row's words in FTS5's term lists (the old segment's entry, and a delete
marker naming the word again), and SQLite 3.40 has no secure-delete option for FTS5: only a merge
of every segment into one ('optimize') drops them. It rewrites the full-text index: seconds at a
million records, and about the index's size of free room.

So a delete that may leave words first marks the merge as owed (a file beside the index, made
before the delete and removed only once the merge's last step has committed), and the forget
merges once its other steps are done: in steps of about a quarter second, each a transaction
(and, for a forget, a writer job) of its own, so that memory writes run between them. A kill
between the delete and the merge's end leaves the mark, and the next forget merges even when it
deletes nothing (its rows went with the first try). Where the disk has less free room than the
index takes, the merge is not tried (it would fail, or take the room the forget's next step
needs): the forget is done all the same, and its answer says the words wait, in their term
lists, for a later forget or `bxctl reindex` with room.
No recall finds them meanwhile: their rows are gone.

The merge aims at what the forget owes, not at what sessions write meanwhile: its first step is
FTS5's 'merge' with a negative page count, which makes every segment there is then (the forget's
delete markers and every older list) the inputs of one merge; the steps after it are 'merge' with a
positive count, which go on with that merge and never start it again. A negative count at every
step started it again whenever a write had added a segment between two steps: a forget while a
session wrote never ended, and each new start added two empty levels to the table's structure
record, which FTS5 calls malformed past 2,000 levels ("database disk image is malformed"; the file's
pages are sound, so quick_check says ok). The steps end when that merge is done (read off the
structure record), and give up, the merge still owed, past a bound of pages set by what the merge
owed at its first step. Each step writes at most MOST_PAGES pages (about a quarter second).

Before it, the tables a recall mode switch set aside (renamed, to be emptied a part at a time by
the build or the switch to spec) are emptied, a bounded part a step, for their rows may hold the
forgotten text too, and the forget says the index holds it no more only once they are gone.
"""

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd import modes
from memoryd.data import purgeslices
from memoryd.errors import IndexUnwritable, MemorydError
from memoryd.home import atomic_write, fsync_dir
from memoryd.index.dbfile import unwritable

log = logging.getLogger("memoryd.data.purge")


class StructureUnread(MemorydError):
    """An FTS5 structure record the merge cannot read, or one with too many levels to start a
    merge: the merge stays owed, the forget done."""


OWED_NAME = "memory.sqlite3.merge-owed"
ROOM_MARGIN = 16 << 20


def owed_path(index) -> Path:
    return Path(index.path).parent / OWED_NAME


def owe(index) -> bool:
    """Mark the merge owed (durably, before the delete); whether it was owed already."""
    path = owed_path(index)
    if path.exists():
        return True
    atomic_write(path, b"")
    return False


def settled(index) -> None:
    """No merge is owed any more."""
    path = owed_path(index)
    try:
        path.unlink()
    except FileNotFoundError:
        return
    try:
        fsync_dir(path.parent)
    except OSError as e:
        # The mark is gone: what the caller did stands. A crash may yet bring it back, which
        # costs only a merge with nothing left to do at the next forget.
        log.warning("%s: removed, but its folder cannot be synced: %s", path, e.strerror or e)


# Each step of the merge writes about this many pages of merged term lists, in a transaction of its
# own, and the next is sized so that a step takes about STEP_SECONDS: memory writes queued behind a
# step wait that long, not for the whole rewrite (13 to 19 s at a million records in context mode).
# A page costs 0.2 to 0.3 ms (measured at 40,000 to 1,000,000 records on a loaded machine): steps
# never grow past MOST_PAGES, so that one slow measure cannot make a step hold the writer seconds.
FIRST_PAGES = 250
STEP_SECONDS = 0.25
FEWEST_PAGES, MOST_PAGES = 64, 1000
# The merge's steps write at most this many times the pages its tables held at its first step (and
# BOUND_SLACK more): a merge of every segment into one writes them once, and the lists that
# writes add meanwhile, which the steps may merge too, are small beside them.
BOUND_TIMES, BOUND_SLACK = 3, 20_000
# FTS5 in SQLite 3.40 calls a table whose structure record has more than 2,000 levels malformed,
# and never takes a level away: each start of a merge of every segment adds up to two (empty ones
# stay below). Past LEVELS_AT_MOST the merge is not started, and the words wait for a reindex,
# which builds the tables anew, rather than bring the table near that limit.
LEVELS_AT_MOST = 1_000


def inline(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a step here: for a caller already on the writer thread."""
    return fn(*args)


def merge_owed(index, on_writer: Callable[..., Any] = inline) -> str | None:
    """Merge every FTS5 table of the index when a merge is owed; None when none is owed any
    more, or why the words wait (no room for the rewrite, a step failed, or the merge did not end
    within its bound).

    on_writer(fn, *args) runs one step on the writer thread and returns its result, so other
    writes run between the steps. The first step of a table starts the merge of every segment it
    has then; the others go on with that merge until it is done (see the module's docstring).
    First the rows a forget left to delete are deleted, a slice a step (purgeslices.py)."""
    purgeslices.finish(index, on_writer)
    if not owed_path(index).exists():
        return None
    room = _room_wanting(Path(index.path))
    if room is not None:
        log.warning(
            "index %s: the words of rows forgotten stay in the full-text term lists for now: %s",
            index.path,
            room,
        )
        return room
    started = time.monotonic()
    while (removed := on_writer(_remove_aside, index)) is not False:
        if isinstance(removed, str):
            return removed
    tables: list[str] = on_writer(_fts5_tables_of, index)
    steps = 0
    for table in tables:
        pages, merging, bound = FIRST_PAGES, None, 0
        while True:
            stepped = on_writer(_step, index, table, pages, merging)
            if isinstance(stepped, str):
                return stepped
            merging, took, owed = stepped
            steps += 1
            if merging is None:
                break
            bound = bound or owed * BOUND_TIMES + BOUND_SLACK
            bound -= pages
            if bound <= 0:
                said = f"its merge did not end within {owed * BOUND_TIMES + BOUND_SLACK:,} pages"
                log.warning("index %s: %s: %s; tried again later", index.path, table, said)
                return said
            # a step's cost per page varies with the segments it reads: grow slowly, shrink at once
            wanted = min(pages * STEP_SECONDS / max(took, 0.001), pages * 1.5)
            pages = int(min(MOST_PAGES, max(FEWEST_PAGES, wanted)))
    on_writer(_finish, index)
    log.info(
        "index %s: %s merged in %d steps, so no word of the rows forgotten stays: %.1f s",
        index.path,
        ", ".join(tables),
        steps,
        time.monotonic() - started,
    )
    return None


def _remove_aside(index) -> bool | str:
    """One step of the removal of the tables a mode switch set aside (True: one made, False: none
    left), or why it failed (the merge stays owed, and the next forget tries again)."""
    conn: sqlite3.Connection = index._write()
    try:
        with index._transaction(conn):
            return modes.remove_set_aside(conn)
    except (sqlite3.Error, IndexUnwritable) as error:
        wrong = unwritable(error, Path(index.path))
        if wrong is None and not isinstance(error, IndexUnwritable):
            raise
        said = wrong[0] if wrong is not None else str(error)
        log.warning("index %s: tables a mode switch set aside not emptied: %s", index.path, said)
        return said


def _fts5_tables_of(index) -> list[str]:
    return _fts5_tables(index._write())


def _step(
    index, table: str, pages: int, merging: int | None
) -> tuple[int | None, float, int] | str:
    """One step of table's merge, writing about pages pages: the first (merging None) starts the
    merge of every segment, the others go on with the merge of level merging. Returns the level
    whose merge is still under way (None: done), the seconds the step took and the pages the
    table's segments held before it; or why it failed (the merge stays owed)."""
    conn: sqlite3.Connection = index._write()
    # the name is the schema's own, quoted; FTS5 takes its commands as an INSERT
    name = '"' + table.replace('"', '""') + '"'
    started = time.monotonic()
    try:
        with index._transaction(conn):
            levels = _levels(conn, table)
            owed = sum(last - first + 1 for _, segments in levels for first, last in segments)
            if merging is None and len(levels) > LEVELS_AT_MOST:
                raise StructureUnread(
                    f"{table}'s full-text structure has {len(levels):,} levels, near what FTS5"
                    " takes: `bxctl reindex` builds it anew"
                )
            if merging is None:
                # a positive count goes on with the merge under way when it has at least as many
                # inputs as any lower level has segments, else merges that level first: with
                # usermerge 2 (FTS5's least) it always does one or the other, never nothing
                conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('usermerge', 2)")  # noqa: S608
            count = -pages if merging is None else pages
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('merge', ?)", (count,))  # noqa: S608
            after = _levels(conn, table)
            if merging is None:
                under_way = [n for n, (inputs, _) in enumerate(after) if inputs]
                merging = under_way[-1] if under_way else None
            elif merging >= len(after) or not after[merging][0]:
                merging = None
    except (sqlite3.Error, IndexUnwritable, StructureUnread) as error:
        wrong = unwritable(error, Path(index.path))
        if wrong is None and not isinstance(error, (IndexUnwritable, StructureUnread)):
            raise
        said = wrong[0] if wrong is not None else str(error)
        log.warning("index %s: %s not merged: %s; tried again later", index.path, table, said)
        return said
    return merging, time.monotonic() - started, owed


def _levels(conn: sqlite3.Connection, table: str) -> list[tuple[int, list[tuple[int, int]]]]:
    """table's FTS5 structure record (the row of id 10 in its _data table): for each level, the
    number of its segments that are the inputs of a merge under way, and each segment's first and
    last leaf page. The form every FTS5 writes for a table that is not contentless_delete (the
    index has none such: its 'V2' form is refused as damage would be, never guessed at)."""
    quoted = '"' + (table + "_data").replace('"', '""') + '"'
    row = conn.execute(f"SELECT block FROM {quoted} WHERE id = 10").fetchone()  # noqa: S608
    if row is None or not row[0]:
        return []
    data: bytes = row[0]
    if data[4:8] == b"\xff\x00\x00\x01":
        raise StructureUnread(f"{table}: its FTS5 structure record is in a form not read here")
    try:
        return _decoded(data)
    except IndexError:
        raise StructureUnread(f"{table}: its FTS5 structure record is cut short") from None


def _decoded(data: bytes) -> list[tuple[int, list[tuple[int, int]]]]:
    at = 4  # after the configuration cookie
    n_levels, at = _varint(data, at)
    _, at = _varint(data, at)  # segments
    _, at = _varint(data, at)  # write counter
    levels = []
    for _ in range(n_levels):
        inputs, at = _varint(data, at)
        count, at = _varint(data, at)
        segments = []
        for _ in range(count):
            _, at = _varint(data, at)  # segment id
            first, at = _varint(data, at)
            last, at = _varint(data, at)
            segments.append((first, last))
        levels.append((inputs, segments))
    return levels


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at data[at]: its value and the offset after it."""
    value = 0
    for n in range(8):
        byte = data[at + n]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + n + 1
    return (value << 8) | data[at + 8], at + 9  # the ninth byte is all value


def _finish(index) -> None:
    settled(index)
    index.wal_owed.truncate(index._write())  # a read holding it: owed (index/walowed.py)


def _room_wanting(db: Path) -> str | None:
    """Why there is not room for a rewrite of the index's full-text tables, or None."""
    try:
        size = sum(os.stat(p).st_size for p in (db, Path(f"{db}-wal")) if p.exists())
        fs = os.statvfs(db.parent)
    except OSError:
        return None  # the merge itself then says what is wrong
    free = fs.f_bavail * fs.f_frsize
    if free >= size + ROOM_MARGIN:
        return None
    wanted = (size + ROOM_MARGIN) >> 20
    return f"the disk has {free >> 20} MiB free, and the merge wants about {wanted} MiB"


def _fts5_tables(conn: sqlite3.Connection) -> list[str]:
    """The FTS5 tables of the index (hits, and the recall modes' own, such as context_hits): read
    from its schema, so that a mode's new table is merged too."""
    rows = conn.execute(
        "SELECT name FROM main.sqlite_schema WHERE type = 'table'"
        " AND lower(sql) LIKE 'create virtual table % using fts5(%'"
    )
    return sorted(r[0] for r in rows)
