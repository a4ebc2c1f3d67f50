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
"""

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.errors import IndexUnwritable
from memoryd.home import atomic_write, fsync_dir
from memoryd.index.dbfile import unwritable

log = logging.getLogger("memoryd.data.purge")

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
FIRST_PAGES = 1000
STEP_SECONDS = 0.25
FEWEST_PAGES, MOST_PAGES = 64, 1 << 16


def inline(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a step here: for a caller already on the writer thread."""
    return fn(*args)


def merge_owed(index, on_writer: Callable[..., Any] = inline) -> str | None:
    """Merge every FTS5 table of the index when a merge is owed; None when none is owed any
    more, or why the words wait (no room for the rewrite, or a step failed).

    on_writer(fn, *args) runs one step on the writer thread and returns its result: the merge is
    FTS5's incremental one ('merge' with a negative page count: every segment is eligible, so the
    steps end in one segment, as 'optimize' does), so other writes run between its steps."""
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
    tables: list[str] = on_writer(_fts5_tables_of, index)
    steps = 0
    for table in tables:
        pages = FIRST_PAGES
        while True:
            stepped = on_writer(_step, index, table, pages)
            if isinstance(stepped, str):
                return stepped
            more, took = stepped
            steps += 1
            if not more:
                break
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


def _fts5_tables_of(index) -> list[str]:
    return _fts5_tables(index._write())


def _step(index, table: str, pages: int) -> tuple[bool, float] | str:
    """One step of table's merge: (whether more is left, the seconds it took), or why it
    failed (the merge stays owed)."""
    conn: sqlite3.Connection = index._write()
    # the name is the schema's own, quoted; FTS5 takes its commands as an INSERT
    name = '"' + table.replace('"', '""') + '"'
    started = time.monotonic()
    try:
        with index._transaction(conn):
            before = conn.total_changes
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('merge', ?)", (-pages,))  # noqa: S608
            # FTS5's own rule: a merge that changed fewer than two rows had nothing left to merge
            more = conn.total_changes - before >= 2
    except (sqlite3.Error, IndexUnwritable) as error:
        wrong = unwritable(error, Path(index.path))
        if wrong is None and not isinstance(error, IndexUnwritable):
            raise
        said = wrong[0] if wrong is not None else str(error)
        log.warning("index %s: %s not merged: %s; tried again later", index.path, table, said)
        return said
    return more, time.monotonic() - started


def _finish(index) -> None:
    settled(index)
    try:
        index._write().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        pass  # readers hold it: the next checkpoint overwrites those frames


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
