"""A reindex's new file put in place of the index, and the connections opened again on what stands.

Renaming a file over an SQLite database that has open connections corrupts it, so the swap closes
every connection first (Index.finish_new, under the swap gate), and it must open them again
whatever happens next: connections left closed refuse every recall and search ("removed or
replaced while memoryd ran") until a restart, while the file at the path is whole.

Before the rename the old index is still in place: a failure there (removing what the old file
left beside it, the rename itself) fails the reindex and the index is as it was (RebuildFailed).
After the rename the new file stands, and the fsync of the folder that makes the rename durable
can still fail (a failing disk). That is no reason to leave the new file unused, nor to answer as
if nothing happened: the connections open it, and the reindex is answered in one line that the
index was rebuilt but its folder could not be synced (NotSynced), so that the owner knows a crash
may bring the old index back.
"""

import contextlib
import logging
import os
import sqlite3
from pathlib import Path

from memoryd.errors import MemorydError, NotSynced, RebuildFailed
from memoryd.home import fsync_dir
from memoryd.index import carryfile
from proto.plural import counted

# Logged under the index's name, as before the swap had a module of its own.
log = logging.getLogger("memoryd.index.index")


class NotReopened(MemorydError):
    """The connections could not be opened again after the swap (or a swap that failed)."""


def put_in_place(new: Path, path: Path) -> OSError | None:
    """Rename new over path, what the old file left beside it removed first; returns the error
    of the folder's fsync after the rename, None when it was synced. Raises RebuildFailed (logged)
    when it fails before the rename: the old index is then as it was."""
    try:
        carryfile.detach_and_remove(None, path)  # the new file has its own vectors
        # Closed cleanly, the old file left no WAL; anything left over belongs to it alone.
        for suffix in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")
        os.replace(new, path)
    except OSError as error:
        why = f"{error.filename}: {error.strerror}" if error.filename else str(error)
        log.error("index %s: the reindex's new file cannot be put in its place: %s", path, why)
        raise RebuildFailed(f"the reindex failed and the index is as it was: {why}") from None
    try:
        fsync_dir(path.parent)
    except OSError as error:
        log.warning(
            "index %s: rebuilt and in use, but its folder %s could not be synced: %s",
            path,
            path.parent,
            error.strerror or error,
        )
        return error
    return None


def reopen(index, replaced: bool) -> None:
    """Open the writer's connection again on the file at the index's path (the new file when
    replaced, else the old one); NotReopened, logged, when it cannot be opened."""
    try:
        index._writer = index._connect()
    except (sqlite3.Error, OSError) as error:
        log.error("index %s: cannot be opened after the reindex's swap: %s", index.path, error)
        done = "the index was rebuilt" if replaced else "the reindex failed, the index as it was"
        raise NotReopened(
            f"{done}, but memoryd cannot open it now ({error}); recall is refused until memoryd"
            " is restarted"
        ) from None


def not_synced(index, error: OSError, logs: int, records: int, notes: int) -> NotSynced:
    """The answer of a reindex whose folder could not be synced after the rename."""
    return NotSynced(
        f"the index was rebuilt ({counted(logs, 'log')}, {counted(records, 'record')},"
        f" {counted(notes, 'note')}) and recall uses it, but its folder {index.path.parent}"
        f" could not be synced ({error.strerror or error}): if the machine stops before the disk"
        " keeps it, the old index may come back; run bxctl reindex again once the disk is mended"
    )
