"""bxctl memory restore: lay a verified backup into the home, whole or not at all.

The archive (a file in {home}/backups/, where bxctl puts it) is read whole and checked against its
manifest into a staging folder before anything is touched (archive.verify). Then, on the writer
thread: a home that holds memory (entries, notes, edits or pending writes) is refused unless
replace, which first holds the files as they are (snapshot.py) and, once the new ones are laid,
writes them to a backup of their own and says where. The files are laid by lay.py (a kill leaves
before or after). The index follows: notes.md is indexed again from its start, and the rows of
every key the restored forgotten.jsonl lists are deleted; session records forgotten in the home
before stay forgotten (their logs are not restored). Session logs in an archive are checked,
never laid: sessions/ is loopd's (memoryd reads it only).
"""

import logging
import os
import shutil
import time
from dataclasses import dataclass

from memoryd.data import backup, lay, layout, recalllog, snapshot
from memoryd.data.archive import Damaged, verify
from memoryd.data.purge import purge, reindex_notes, reset_tail
from memoryd.errors import AdminRefused, MemorydError
from memoryd.home import Home, read_file
from memoryd.journal import forgotten
from memoryd.memory import entries

log = logging.getLogger(__name__)


def has_memory(home: Home) -> str | None:
    """What memory the home holds, said in a few words, or None when it holds none."""
    found = []
    for name in ("memory.md", "user.md"):
        try:
            n = len(entries.parse(entries.decode(read_file(home.memory_file(name)), name)))
        except (OSError, MemorydError):  # unreadable counts as something there
            n = 1
        if n:
            found.append(f"{n} entries in {name}")
    for name in ("notes.md", "pending.jsonl"):
        try:
            if os.path.getsize(home.memory_file(name)):
                found.append(f"a non-empty {name}")
        except OSError:
            pass
    for archived, path in layout.memory_files(home):
        if archived.startswith("memory/edits/") and path.stat().st_size:
            found.append("an edit journal")
            break
    return ", ".join(found) or None


@dataclass
class Laid:
    manifest: dict
    before: str | None  # the backup of what was there (replace)
    waited: float


def archive_path(home: Home, name: str):
    if not layout.NAME.match(name):
        raise AdminRefused(f"refused: {name[:64]!r} is not the name of a file in backups/")
    path = layout.backups(home) / name
    if not path.is_file() or path.is_symlink():
        raise AdminRefused(f"refused: backups/ holds no archive {name}")
    return path


def run(service, name: str, replace: bool) -> Laid:
    """Restore the archive backups/name (on a reader: the writer is taken only to lay it)."""
    home: Home = service.store.home
    path = archive_path(home, name)
    staging = lay.new_staging(home)
    try:
        verified = verify(path, lambda member: staging / member)
        members = [m for m in verified.staged if m.startswith("memory/")]
        if "memory/soul.md" not in members:
            raise Damaged("refused: the archive holds no soul.md; it is not a whole backup")
        future = service._writer.submit(0, _lay, service, staging, members, replace)
        held, waited = future.result()
    except OSError as e:
        if lay.committed(home, staging):  # past its plan: the next start finishes it
            log.error("%s: restore stopped after its point of no return: %s", home.memory, e)
            raise AdminRefused(
                f"refused: the restore stopped part way ({e.strerror or e}); memoryd finishes it "
                "at its next start (restart it)"
            ) from None
        shutil.rmtree(staging, ignore_errors=True)
        raise AdminRefused(
            f"refused: the restore failed ({e.strerror or e}); the home is as it was"
        ) from None
    except BaseException:
        if not lay.committed(home, staging):
            shutil.rmtree(staging, ignore_errors=True)
        raise
    before = None
    if held is not None:
        before = str(backup.make(home, held, False).path)
    return Laid(verified.manifest, before, waited)


def _lay(service, staging, members: list[str], replace: bool):
    started = time.monotonic()
    store = service.store
    home: Home = store.home
    there = has_memory(home)
    if there is not None and not replace:
        raise AdminRefused(
            f"refused: the home holds memory ({there}); restore --replace backs it up first, "
            "then replaces it"
        )
    held = snapshot.take(home) if there is not None else None
    # Session records the owner made memoryd forget stay forgotten: the logs are not restored,
    # so an older archive must not bring them back into the index. (Note keys belong to the
    # notes.md they were made in, which the archive replaces.)
    sessions_forgotten = sorted(k for k in forgotten.keys(home) if k.startswith("session:"))
    try:
        wanted = [m.removeprefix("memory/") for m in members]
        current = [a.removeprefix("memory/") for a, _ in layout.memory_files(home)]
        remove = [rel for rel in current if rel not in wanted and rel != "soul.md"]
        with recalllog.held(service):
            lay.commit(home, staging, wanted, remove)
    except BaseException:
        if held is not None:
            held.close()
        raise
    reset_tail(store)
    restored = forgotten.keys(home)
    stamp = store.now().strftime("%Y-%m-%dT%H:%MZ")
    for key in sessions_forgotten:
        if key not in restored:
            forgotten.add(home, key, stamp, "restore")
    log.info("%s: restored %d files", home.memory, len(wanted))
    purge(service.index, sorted(forgotten.keys(home)))
    reindex_notes(service.index)
    return held, time.monotonic() - started
