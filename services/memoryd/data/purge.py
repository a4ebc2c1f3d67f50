"""Taking forgotten records out of the index in use, on the writer thread.

The rows go through the indexer's own delete (so the recall modes' tables and the count of
deletions that readers watch follow), with SQLite's secure_delete on, so the freed pages are
zeroed, and the WAL is checkpointed and truncated after, so no old page image keeps the text:
when a read of the index holds the WAL, the truncation is owed and tried again until it is done
(index/walowed.py, whose said() is what a forget's answer says of it meanwhile).
A delete leaves the row's words in FTS5's term lists until a merge (ftsmerge.py), which the
forget runs once its other steps are done.

After a restore has laid its files, after_restore brings the index up to date; when it cannot,
the index file is removed, so that no row of a key the restored forgotten.jsonl lists can be
recalled: recall is refused (samefile.py) until bxctl reindex or a restart builds it again, both of
which skip every forgotten key.
"""

import logging
import sqlite3

from memoryd.data import ftsmerge, purgeslices, replacedlogs
from memoryd.data.purgeslices import NOTE_KINDS, condition, key_of
from memoryd.errors import MemorydError
from memoryd.home import fsync_dir
from memoryd.index import indexer, notesprefix
from memoryd.index.dbfile import remove_database
from memoryd.index.sessionrows import LogState
from memoryd.journal import forgotten, keptout

log = logging.getLogger(__name__)

REBUILT = "the index was rebuilt from notes.md and sessions/"


def rows_of(conn: sqlite3.Connection, key: str) -> list[int]:
    """The rowids key names (a scan of sources: run it on a reader, off the writer)."""
    where, params = condition(key)
    sql = f"SELECT rowid FROM sources WHERE {where}"  # noqa: S608 - fixed text, bound values
    return [r[0] for r in conn.execute(sql, params)]


def rows_of_keys(conn: sqlite3.Connection, keys) -> dict[str, list[int]]:
    """The rowids of each of keys that names any, in one pass over sources for them all: a
    forget run again after a kill lists tens of thousands of keys whose rows are already
    deleted, and a scan of sources a key (no index holds session and record) took minutes."""
    listed = forgotten.condition(set(keys))
    if listed is None:
        return {}
    where, params = listed
    sql = f"SELECT rowid, kind, session, record FROM sources WHERE {where}"  # noqa: S608
    found: dict[str, list[int]] = {}
    for rowid, kind, session, record in conn.execute(sql, params):
        key = key_of(kind, session, record)
        if key is not None:
            found.setdefault(key, []).append(rowid)
    return found


def purge(index, keys: list[str], hints: dict[str, list[int]] | None = None) -> int:
    """Delete the index rows of keys (note:N, session:ID:N); the rows deleted. Those a quarter
    second of this job does not delete are deleted in slices by ftsmerge.merge_owed, each a
    writer job (purgeslices.py), before it merges their words out of the term lists, once the
    forget's other steps are done. hints: the rowids of each key found on a reader before, so
    that the writer need not scan."""
    if not keys:
        return 0
    hints = hints or {}
    conn: sqlite3.Connection = index._write()
    index.end_carry()  # the kept vectors' file holds the old rows' text too
    conn.execute("PRAGMA secure_delete = ON")
    owed_before = ftsmerge.owe(index)
    before = conn.total_changes
    with index._transaction(conn):
        listed = dict.fromkeys(keys)
        # the keys found none before are looked for here, in one pass for them all (rows may
        # have come since), and their rows deleted by rowid with the rest
        unhinted = [key for key in listed if not hints.get(key)]
        found = rows_of_keys(conn, unhinted) if unhinted else {}
        # by rowid, a statement a chunk, each rowid's row checked to be still of its key (those
        # that are not have their keys' rows looked for): what a quarter second does not delete
        # is left for the slices after (purgeslices.py), each a writer job of its own
        hinted = {rowid: key for key in listed for rowid in (hints.get(key) or found.get(key, []))}
        purgeslices.delete(index, conn, hinted)
        deleted = conn.total_changes - before
    if not deleted and not owed_before and not purgeslices.left(index):
        ftsmerge.settled(index)  # nothing deleted, nothing owed
    if purgeslices.left(index):
        return deleted  # the last slice checkpoints
    return _checkpointed(index, conn, deleted)


def _checkpointed(index, conn: sqlite3.Connection, deleted: int) -> int:
    """deleted (the rows deleted), once the WAL holding their old pages is checkpointed and
    truncated; when a read holds it, waited for a quarter second at most, and owed
    (index/walowed.py)."""
    index.wal_owed.truncate(conn)
    return deleted


def purge_kept_out(index) -> int:
    """Delete every row forgotten.jsonl keeps out (keptout.rows_condition), as purge() does:
    after a restore, whose forgotten.jsonl may list what this home's logs hold. A record a new
    log of the same session name holds under a key whose forget listed the digests of what it
    took stays."""
    conn: sqlite3.Connection = index._write()
    index.end_carry()
    conn.execute("PRAGMA secure_delete = ON")
    owed_before = ftsmerge.owe(index)
    before = conn.total_changes
    with index._transaction(conn):
        gone = keptout.rows_condition(conn, index.home)
        if gone is not None:
            indexer._delete_rows(conn, *gone)
        deleted = conn.total_changes - before
    if not deleted and not owed_before:
        ftsmerge.settled(index)
    _checkpointed(index, conn, deleted)
    ftsmerge.merge_owed(index)  # a restore's answer says nothing of words: logged when they wait
    return deleted


def reindex_notes(index) -> int:
    """Index notes.md again from its start (its bytes were replaced whole); the rows added."""
    conn: sqlite3.Connection = index._write()
    index.notes_seen.replaced()  # before: a forget that sees the new rows sees this too
    with index._transaction(conn):
        indexer._delete_rows(conn, NOTE_KINDS, ())
        indexer.save_state(conn, indexer.NOTES_LOG, LogState())
        return indexer.index_notes(conn, index.home, index.settings)


def reset_tail(store) -> None:
    """The journal was replaced or rewritten: its derived index (which holds entry text) is
    dropped, saved copy and all, and rebuilt from the journal when next asked."""
    store.journal_index.discard()


def shift_notes(index, shifts: list[tuple[int, int]]) -> None:
    """notes.md had notes rewritten in place (forget): move the index's offset in it by what the
    notes before the offset grew or shrank, and hash its new tail, so that the next catch-up goes
    on from there instead of indexing every note again."""
    conn: sqlite3.Connection = index._write()
    path = index.home.memory_file("notes.md")
    with index._transaction(conn):
        state = indexer.load_state(conn, indexer.NOTES_LOG)
        if state is None or not state.bytes:
            return
        state.bytes += sum(change for end, change in shifts if end <= state.bytes)
        state.tail = indexer._tail_hash(path, state.bytes, indexer.NOTES_WINDOW)
        # The bytes before the offset were rewritten, even where the offset did not move: the
        # digest a restart reads on by is taken again of them (one read of notes.md, no parse).
        state.prefix = notesprefix.extend(path, None, 0, state.bytes)
        indexer.save_state(conn, indexer.NOTES_LOG, state)


def after_restore(service, sessions: list[str] | None = None) -> str:
    """On the writer, once a restore's files are laid: the journal's derived index dropped, the
    rows of every key the restored forgotten.jsonl lists deleted, notes.md indexed again, and
    what the index read of each of sessions (those whose log the archive holds) whose log the
    home lacks dropped, so that the log bxctl lays there is read anew (replacedlogs.py). Returns
    what the answer says of the index: a step that failed, and what the owner is to do, never
    raised (the files are restored whatever follows)."""
    store, index = service.store, service.index
    kept = None
    try:
        reset_tail(store)
    except OSError as e:
        kept = e.strerror or str(e)
        log.error("%s: not removed after a restore: %s", store.journal_index.path, kept)
    found = index.gone()
    if found is not None:
        # The connections are to a file no longer at the path: bringing that file up to date
        # would leave recall refused all the same, so the answer says what recall waits for.
        log.error(
            "index %s: %s while memoryd ran; not brought up to date after a restore",
            index.path,
            found,
        )
        said = (
            f"but the index file {index.path} was {found} while memoryd ran, so recall is "
            "refused until it is rebuilt: run bxctl reindex"
        )
    else:
        try:
            purge_kept_out(index)
            reindex_notes(index)
            replacedlogs.drop(index, sessions or [])
            said = REBUILT
        except (OSError, sqlite3.Error, MemorydError) as e:
            said = _dropped(service, (e.strerror if isinstance(e, OSError) else None) or str(e))
    if kept is not None:
        said += (
            f"; but {store.journal_index.path}, memoryd's summary of the journal that was "
            f"replaced, could not be removed ({kept}): remove it"
        )
    return said


def _dropped(service, reason: str) -> str:
    """The index could not be brought up to date: removed (recall refused until it is built
    again); if even that fails, memoryd refuses memory (service.unfinished) until the owner has
    removed it and restarted memoryd."""
    path = service.index.path
    step = "removed"
    try:
        service.index.dropped(reason)
        remove_database(path)
        step = "synced"
        fsync_dir(path.parent)
    except OSError as e:
        failed = e.strerror or str(e)
        # Removed but not synced, a crash may yet bring the file back: refused all the same,
        # and said as it is.
        nor, then = (
            (f"nor removed ({failed})", f"remove {path}")
            if step == "removed"
            else (f"and its removal could not be synced ({failed})", f"check {path} is gone")
        )
        log.error(
            "index %s: not brought up to date after a restore (%s), %s; memory is refused",
            path,
            reason,
            nor,
        )
        service.unfinished = (
            f"refused: the memory index could not be brought up to date after a restore "
            f"({reason}) {nor}; stop memoryd, {then}, then start it"
        )
        return (
            f"but the index could not be brought up to date ({reason}) {nor}, "
            f"so memoryd refuses memory: stop memoryd, {then}, then start it"
        )
    log.error(
        "index %s: not brought up to date after a restore (%s); removed, so that nothing "
        "forgotten is recalled from it: recall is refused until bxctl reindex or a restart",
        path,
        reason,
    )
    return (
        f"but the index could not be brought up to date ({reason}), so recall is refused until "
        "it is rebuilt: run bxctl reindex"
    )
