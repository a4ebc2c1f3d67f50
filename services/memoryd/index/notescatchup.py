"""notes.md caught up on the writer a part at a time, and how far the index holds it.

Index.catch_up_notes runs one part of notes.md's reading (notesparts.py) in its own transaction
and keeps, beside it, what recall says meanwhile (Index.notes_behind: bytes read of notes.md's
size) and what NotesSeen is told of the reading: whether it read notes.md again from its start
(a deletion of rows shows it) and the offset and digests it holds notes.md to. Kept apart from the
index (index.py), which hands it the writer, and from a reindex's swap (finishnew.py), which asks
the new file the same question of how far it holds notes.md.
"""

import sqlite3

from memoryd.errors import IndexUnwritable
from memoryd.index import indexer, notesparts
from memoryd.search.schema import DELETIONS_PRAGMA


def notes_file(index) -> str | None:
    """notes.md's stat now, taken before memoryd writes it (Index.notes_file)."""
    try:
        return indexer.file_of(index.home.memory_file("notes.md"), whole=True)
    except OSError:  # not known: the catch-up after the write takes any change as another's
        return None


def catch_up(index, own_from: str | None) -> int:
    """One part of notes.md's new entries on the index's writer; the rows added
    (Index.catch_up_notes)."""
    conn = index._write_same()
    seen = index.notes_seen.look()
    behind = index.notes_behind
    try:
        with index._damage_refused("memory/notes.md"):
            before = deletions(conn)
            with index._transaction(conn):
                added, done = notesparts.index_notes_part(
                    conn,
                    index.home,
                    index.settings,
                    own_from,
                    told=index._notes_told,
                )
                if not done:  # said before the commit: a recall that sees the part says so
                    part_reached = notes_reached(conn)
                    at = part_reached[0] if part_reached else 0
                    index.notes_behind = (at, size(seen))
            # It deletes rows only to read notes.md again from its start.
            renumbered = deletions(conn) != before
            reached = notes_reached(conn)
    except BaseException as error:
        index.notes_behind = behind  # nothing of the part was committed
        # Not read for want of room: the next recall tries again, as for a changed notes.md.
        index.notes_seen.done(seen, ok=False, again=isinstance(error, IndexUnwritable))
        raise
    index.notes_seen.done(seen, renumbered=renumbered, reached=reached)
    index.notes_behind = None if done else (reached[0] if reached else 0, size(seen))
    if not done and index.notes_left is not None:
        index.notes_left()
    return added


def deletions(conn: sqlite3.Connection) -> int:
    """The file's count of row deletions, raised by each (schema.DELETIONS_PRAGMA)."""
    return int(conn.execute(f"PRAGMA {DELETIONS_PRAGMA}").fetchone()[0])


def size(seen: tuple) -> int:
    """notes.md's size in its stat as NotesSeen takes it (0 when missing or unreadable)."""
    return int(seen[3]) if len(seen) == 6 else 0


def notes_reached(conn: sqlite3.Connection) -> tuple[int, str, str | None] | None:
    """The offset the index holds notes.md to, the hash of the bytes just before it and the
    digest of every whole block before it (NotesSeen tells notes.md that only grew from one
    edited with them), or None when it holds none."""
    state = indexer.load_state(conn, indexer.NOTES_LOG)
    return None if state is None else (state.bytes, state.tail, state.prefix)
