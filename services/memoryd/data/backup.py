"""bxctl memory backup: one archive of memoryd's files in {home}/backups/, written atomically.

The writer thread only takes the snapshot (snapshot.py: an open and an fstat per file, no copy);
the archive is written after, on the caller's thread, while writes go on. It is written to a
temporary file in backups/, fsync'd, then linked to its final name (which never overwrites) and
the folder fsync'd, so a full disk or a kill leaves no partial archive: the temporary file is
removed on any failure (and a leftover one by the next backup), and so is the final name when the
folder's fsync fails (an archive a crash may yet lose is none to count on), so a refusal that says
no archive was left is true. `keep` removes all but the newest keep archives memoryd made, for the
daily timer (backupkeep.py: which are the newest when the clock once ran ahead).

Only the routine archives are pruned (memory-<time>[-N].tar.gz). An archive holding session logs
(--with-sessions, memory-<time>-sessions.tar.gz) and the copy restore --replace makes of the memory
it replaces (memory-<time>-replaced.tar.gz) are named apart and kept until the owner removes them:
the first may be the only copy of the logs, the second the only copy of that memory, and a week of
daily backups would otherwise push either out.
"""

import datetime as dt
import fcntl
import logging
import os
import re
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import archive, entriesheld, layout, notestream, restorable, snapshot
from memoryd.data.snapshot import Held, Snapshot
from memoryd.errors import AdminRefused, FileDamaged
from memoryd.home import Home, ensure_dir, fsync_dir
from memoryd.index import dbname
from memoryd.journal import forgottenmarker
from memoryd.memory import notes
from proto import plural

log = logging.getLogger(__name__)

# The temporary files of an archive (make, below) and of an export (proto.files, scrub.py).
MEMORYD_TEMP = re.compile(r"\A\.(?:memory|export)-[0-9]{8}T[0-9]{6}Z[^/]*\.tmp\Z")
# bxctl's copies handed over, and their temporary files (bxctl/handover.py: handed_over, copy_new,
# which names its temporary file .bxctl-<12 hex>.tmp; an older bxctl named it after the copy).
HANDED_OVER = re.compile(r"\A(?:\.\.?incoming-[0-9a-f]{12}[^/]*|\.bxctl-[0-9a-f]{12}\.tmp)\Z")
HANDED_SECONDS = 2 * 3600  # twice the hour bxctl waits at most for memoryd's answer about one
ARCHIVE_NAME = re.compile(r"^memory-([0-9]{8}T[0-9]{6}Z)(?:-([0-9]+))?\.tar\.gz\Z")
# The kinds of archive that prune leaves alone, by what follows the time in their names.
SESSIONS = "sessions"
REPLACED = "replaced"
# How a memoryd before this one counted notes.md's notes for a manifest (notes_said_before):
# headers, less the notes whose text the owner made memoryd forget (a header, then only the
# marker), each found in one chunk of BEFORE_CHUNK bytes at a time.
BEFORE_CHUNK = 1 << 20
NOTE_HEADER = re.compile(rb"(?m)^\xc2\xa7 (?:noted|moved|dropped) ")
FORGOTTEN_NOTE = re.compile(
    rb"(?m)^\xc2\xa7 (?:noted|moved|dropped) [^\n]*\n"
    + re.escape(forgottenmarker.MARKER_PREFIX.encode())
    + rb"[^\n]*\]\n?(?=\xc2\xa7 |\Z)"
)


@dataclass
class Made:
    path: Path
    size: int
    manifest: dict
    waited: float
    # The memory files whose entries the counts leave out, as memoryd reads none of them.
    uncounted: list[dict] = field(default_factory=list)

    def uncounted_said(self) -> str:
        """What the answer adds after the counts ("" when every file was counted)."""
        return entriesheld.said(self.uncounted)


def counts(snap: Snapshot, index_db: Path | None) -> dict:
    """entries, notes, edits, pending, records, read from the held files; records are those the
    index holds of the session logs held (none held, none counted: the logs stay in sessions/).
    A memory.md or user.md memoryd reads no entry of adds none (entriesheld.uncounted names it)."""
    out = {"entries": 0, "notes": 0, "edits": 0, "pending": 0, "records": 0}
    for held in snap.files:
        if held.name in entriesheld.FILES:
            try:
                out["entries"] += entriesheld.count(held)
            except FileDamaged:  # archived as it is, to be mended: entriesheld.uncounted says so
                continue
        elif held.name == "memory/notes.md":
            out["notes"] = notes_of(held)
        elif held.name.startswith("memory/edits/"):
            out["edits"] += sum(c.count(b"\n") for c in held.chunks())
        elif held.name == "memory/pending.jsonl":
            out["pending"] = sum(c.count(b"\n") for c in held.chunks())
    logs = sessions_of(snap.files)
    out["records"] = index_records(index_db, logs) if logs else 0
    return out


def held_counts(home: Home) -> dict:
    """The counts of the memory files home holds now, as a backup counts them (a restore's
    staged files, once what it leaves out is out: what it lays). No session log: records 0."""
    snap = snapshot.of_files(layout.memory_files(home))
    try:
        return counts(snap, None)
    finally:
        snap.close()


def sessions_of(files: list[Held]) -> set[str]:
    """The sessions whose logs are among files (named sessions/{session}/0.jsonl)."""
    return {f.name.split("/")[1] for f in files if f.name.startswith("sessions/")}


def notes_of(held: Held) -> int:
    """The notes of notes.md as an export and the index tell them: the entries notes.parse
    gives (a damaged header's too) but those whose text is a forget's marker. The file has no
    limit (spec 3), so it is read as a stream cut where notes.parse starts a note
    (notestream.pieces): a header a chunk's end cuts is counted once, as everywhere else. Only
    the first piece and one holding the marker's words are parsed; every other is one note."""
    prefix = forgottenmarker.MARKER_PREFIX.encode()
    found = 0
    for start, piece in notestream.pieces(held.chunks()):
        if start and prefix not in piece:
            found += 1
            continue
        found += sum(not forgottenmarker.is_marker(n.text) for n in notes.parse(piece, start))
    return found


def notes_said_before(snap: Snapshot) -> set[int]:
    """The notes counts a memoryd before this one wrote in the manifest of an archive holding
    snap's notes.md, so that restore takes its archives as they were made: its headers less its
    forgotten notes, and before that its headers, each found a chunk at a time (a header a
    chunk's end cut went uncounted, from 1 MiB on)."""
    headers = forgot = 0
    for held in snap.files:
        if held.name == "memory/notes.md":
            for c in held.chunks(BEFORE_CHUNK):
                headers += len(NOTE_HEADER.findall(c))
                forgot += len(FORGOTTEN_NOTE.findall(c))
    return {headers - forgot, headers}


def index_records(index_db: Path | None, sessions: set[str]) -> int:
    """The index's session records of sessions (derived, so a count for the owner, not a
    checksum): those of an archive's logs, never of a log it does not hold."""
    held = records_by_session(index_db)
    return sum(n for session, n in held.items() if session in sessions)


def records_by_session(index_db: Path | None) -> dict[str, int]:
    """The index's session records, counted by session ({} when it cannot be read)."""
    if index_db is None or not index_db.exists():
        return {}
    try:
        conn = dbname.connect_read_only(index_db, timeout=30)
        try:
            rows = conn.execute(
                "SELECT session, count(*) FROM sources WHERE kind = ? GROUP BY session",
                ("session",),
            ).fetchall()
        finally:
            conn.close()
        return {str(session): int(n) for session, n in rows}
    except sqlite3.Error:
        return {}


def new_name(folder: Path, now: dt.datetime, kind: str | None = None) -> str:
    """A name no archive in folder has; kind (SESSIONS, REPLACED) names one prune leaves alone."""
    base = f"memory-{now:%Y%m%dT%H%M%SZ}" + (f"-{kind}" if kind else "")
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


def remove_all_leftovers(home: Home) -> None:
    """The files in backups/ that a killed command left, each holding memory's text in clear
    where no forget reaches: a backup's or an export's temporary file (memoryd killed while it
    wrote), and a copy bxctl handed over for an import or a restore, or its temporary file (bxctl
    killed before it removed it). Called when no backup or export of memoryd's can be writing:
    at start, and by a forget, which runs alone (datalock.py), before it scrubs the exports.

    A copy bxctl hands over is in use from before it is made until bxctl removes it, however
    long memoryd takes to answer; bxctl holds a shared lock (flock) on backups/ all that time
    (handover.py). So the copies are removed only when the exclusive lock is free: no bxctl is
    handing one over. Otherwise only those older than HANDED_SECONDS, which no bxctl can still
    be waiting on (it waits at most an hour for memoryd's answer)."""
    folder = layout.backups(home)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:  # no backups/ yet, or not a folder (a backup or an export says so)
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            free = True
        except OSError:  # a bxctl is handing a copy over
            free = False
        for name in os.listdir(fd):
            what = _leftover(fd, name, free)
            if what is None:
                continue
            try:
                os.unlink(name, dir_fd=fd)
                log.info("%s: removed %s", folder / name, what)
            except FileNotFoundError:
                pass
            except OSError as e:
                log.warning("%s: cannot remove %s: %s", folder / name, what, e.strerror or e)
    except OSError as e:
        log.warning("%s: leftovers not removed: %s", folder, e.strerror or e)
    finally:
        os.close(fd)  # the lock with it


def _leftover(fd: int, name: str, free: bool) -> str | None:
    """What left the file name in the folder of fd, when it is a leftover to remove; else None."""
    handed = HANDED_OVER.match(name) is not None
    if not handed and not MEMORYD_TEMP.match(name):
        return None
    try:
        st = os.lstat(name, dir_fd=fd)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):  # not memoryd's nor bxctl's: the owner's, left alone
        return None
    if handed and not free and time.time() - st.st_mtime < HANDED_SECONDS:
        return None  # a running bxctl may still hand it over
    if handed:
        return "a copy of the owner's file left by a bxctl import or restore that was stopped"
    return "a temporary file left by a backup or an export that did not finish"


def make(
    home: Home,
    snap: Snapshot,
    with_sessions: bool,
    replaced: bool = False,
    records: int | None = None,
) -> Made:
    """Write snap's archive into backups/; the snapshot is closed after. replaced: the copy
    restore --replace makes of the memory it replaces. Either that or with_sessions gives a name
    prune never takes. records: the index's count of the session logs snap holds, read when the
    snapshot began (else now; 0 when it holds none). An
    archive restore would refuse is refused instead, none left (restorable.py)."""
    folder = layout.backups(home)
    linked = None
    try:
        restorable.before_writing(snap.files)
        ensure_dir(folder)
        remove_leftovers(folder)
        now = dt.datetime.now(dt.UTC)
        kind = REPLACED if replaced else SESSIONS if with_sessions else None
        name = new_name(folder, now, kind)
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                counted = counts(snap, home.index_db if records is None else None)
                if records is not None:
                    counted["records"] = records
                uncounted = entriesheld.uncounted(snap)
                manifest = archive.write(out, snap, counted, with_sessions, uncounted)
                out.flush()
                os.fsync(out.fileno())
            final = folder / name
            os.link(tmp, final)  # never over an existing archive
            linked = final
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        fsync_dir(folder)
    except OSError as e:
        log.error("%s: backup failed: %s", folder, e.strerror or e)
        # An archive is not made until its folder is synced (a crash may yet lose it, so it is
        # no backup to count on): one linked in is removed, so "no archive was left" is true.
        left = linked is not None and not _removed(linked)
        where = f"{linked} is left, not synced" if left else f"no archive was left in {folder}"
        raise AdminRefused(f"refused: the backup failed ({e.strerror or e}); {where}") from None
    finally:
        snap.close()
    size = final.stat().st_size
    said = plural.counted(size, "byte"), plural.counted(len(manifest["files"]), "file")
    log.info("%s: backup written (%s, %s)", final, *said)
    return Made(final, size, manifest, snap.waited, uncounted)


def _removed(final: Path) -> bool:
    """Remove an archive linked in before its folder's fsync failed; False (logged) when it
    cannot be."""
    try:
        os.unlink(final)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.error("%s: an archive whose folder cannot be synced is left: %s", final, e.strerror)
        return False
    return True
