"""bxctl memory backup: one archive of memoryd's files in {home}/backups/, written atomically.

The writer thread only takes the snapshot (snapshot.py: an open and an fstat per file, no copy);
the archive is written after, on the caller's thread, while writes go on. It is written to a
temporary file in backups/, fsync'd, then linked to its final name (which never overwrites) and
the folder fsync'd, so a full disk or a kill leaves no partial archive: the temporary file is
removed on any failure (and a leftover one by the next backup). `keep` removes all but the newest
keep archives memoryd made, for the daily timer.
"""

import datetime as dt
import logging
import os
import re
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from memoryd.data import archive, layout
from memoryd.data.snapshot import Held, Snapshot
from memoryd.errors import AdminRefused, FileDamaged
from memoryd.home import Home, ensure_dir, fsync_dir
from memoryd.memory import entries

log = logging.getLogger(__name__)

ARCHIVE_NAME = re.compile(r"^memory-(\d{8}T\d{6}Z)(?:-(\d+))?\.tar\.gz\Z")
NOTE_HEADER = re.compile(rb"(?m)^\xc2\xa7 (?:noted|moved|dropped) ")


@dataclass
class Made:
    path: Path
    size: int
    manifest: dict
    waited: float


def _read(held: Held) -> bytes:
    return b"".join(held.chunks())


def counts(snap: Snapshot, index_db: Path | None) -> dict:
    """entries, notes, edits, pending, records, read from the held files (and the index)."""
    out = {"entries": 0, "notes": 0, "edits": 0, "pending": 0, "records": 0}
    for held in snap.files:
        if held.name in ("memory/memory.md", "memory/user.md"):
            try:
                text = entries.decode(_read(held), held.name)
            except FileDamaged:  # archived as it is, to be mended: its entries go uncounted
                continue
            out["entries"] += len(entries.parse(text))
        elif held.name == "memory/notes.md":
            out["notes"] = sum(len(NOTE_HEADER.findall(c)) for c in held.chunks())
        elif held.name.startswith("memory/edits/"):
            out["edits"] += sum(c.count(b"\n") for c in held.chunks())
        elif held.name == "memory/pending.jsonl":
            out["pending"] = sum(c.count(b"\n") for c in held.chunks())
    out["records"] = index_records(index_db)
    return out


def index_records(index_db: Path | None) -> int:
    """Session records in the index (derived, so a count for the owner, not a checksum)."""
    if index_db is None or not index_db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{index_db}?mode=ro", uri=True, timeout=30)
        try:
            (n,) = conn.execute("SELECT count(*) FROM sources WHERE kind = 'session'").fetchone()
        finally:
            conn.close()
        return int(n)
    except sqlite3.Error:
        return 0


def new_name(folder: Path, now: dt.datetime) -> str:
    base = f"memory-{now:%Y%m%dT%H%M%SZ}"
    name, n = f"{base}.tar.gz", 1
    while os.path.lexists(folder / name):
        n += 1
        name = f"{base}-{n}.tar.gz"
    return name


def remove_leftovers(folder: Path) -> None:
    for path in folder.glob(".memory-*.tmp"):
        try:
            path.unlink()
            log.info("%s: removed a partial archive left by a backup that did not finish", path)
        except OSError:
            pass


def make(home: Home, snap: Snapshot, with_sessions: bool) -> Made:
    """Write snap's archive into backups/; the snapshot is closed after."""
    folder = layout.backups(home)
    try:
        ensure_dir(folder)
        remove_leftovers(folder)
        now = dt.datetime.now(dt.UTC)
        name = new_name(folder, now)
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                manifest = archive.write(out, snap, counts(snap, home.index_db), with_sessions)
                out.flush()
                os.fsync(out.fileno())
            final = folder / name
            os.link(tmp, final)  # never over an existing archive
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        fsync_dir(folder)
    except OSError as e:
        log.error("%s: backup failed: %s", folder, e.strerror or e)
        raise AdminRefused(
            f"refused: the backup failed ({e.strerror or e}); no archive was left in {folder}"
        ) from None
    finally:
        snap.close()
    size = final.stat().st_size
    log.info("%s: backup written (%d bytes, %d files)", final, size, len(manifest["files"]))
    return Made(final, size, manifest, snap.waited)


def _made(folder: Path, name: str) -> bool:
    """Whether memoryd made the archive named name: a regular file, its name's time one a clock
    gives. A name that only looks like one (memory-20260230T...) is the owner's, never pruned."""
    m = ARCHIVE_NAME.match(name)
    try:
        dt.datetime.strptime(m.group(1) if m else "", "%Y%m%dT%H%M%SZ")
        return stat.S_ISREG(os.lstat(folder / name).st_mode)
    except (ValueError, OSError):
        return False


def prune(home: Home, keep: int, made: Path | None = None) -> list[str]:
    """Remove all but the newest keep archives memoryd made, by the time in their names; the
    names removed. made, the archive just written, is always one of those kept: a name from a
    clock that ran ahead must not push it out."""
    folder = layout.backups(home)
    try:
        listed = os.listdir(folder)
    except OSError as e:  # the new backup stands; the old ones wait for the next prune
        log.warning("%s: older backups not removed: %s", folder, e.strerror or e)
        return []
    found = [
        (m.group(1), int(m.group(2) or 1), n)
        for n in listed
        if (m := ARCHIVE_NAME.match(n)) and (made is None or n != made.name) and _made(folder, n)
    ]
    others = max(0, keep - 1) if made is not None else keep
    names = [n for _, _, n in sorted(found)]
    gone = []
    for name in names[: max(0, len(names) - others)]:
        try:
            os.unlink(folder / name)
        except OSError as e:  # the new backup stands; the old one waits for the next prune
            log.warning("%s: cannot be removed: %s", folder / name, e.strerror)
            continue
        gone.append(name)
        log.info("%s: removed (keeping the newest %d backups)", folder / name, keep)
    if gone:
        try:
            fsync_dir(folder)
        except OSError as e:
            log.warning("%s: cannot be synced: %s", folder, e.strerror or e)
    return gone
