"""bxctl memory restore, after memoryd: the archive's session logs laid into {home}/sessions/.

memoryd lays the memory files of an archive and only checks its session logs (backup
--with-sessions): sessions/ is loopd's, and memoryd's container mounts it read only. bxctl runs on
the host as the owner, so it lays them. It reads the archive itself, with the bounds memoryd's
verifier keeps (sessionarchive.py), twice: once for the manifest, which comes last, and once to
lay. Each sessions/<ID>/0.jsonl whose ID is a session id and whose log the home lacks is laid once
its size and sha256 match the manifest; a log that is there is loopd's and is kept as it is (never
replaced, never appended to). A log the home lacks whose session holds a record the owner made
memoryd forget after the archive was made (memoryd names those sessions in its answer) is left
out, and said, as the restore leaves out every text forgotten since: the owner may have removed
the log to be rid of it. A file is written to a temporary name in its folder, fsync'd and
linked to its name (never over one), the folder fsync'd; folders 0700, files 0600, owned by
whoever owns sessions/ (the containers' user 10001 when bxctl runs as root under rootful podman).
Every folder is opened without following a link, as loopd's user could put one there. Then
memoryd hears session_updated for each over its loopd socket and indexes them as it indexes a
finished turn (forgotten records stay out); when it cannot be reached, its next start indexes
them. The answer says how many it indexed and names those it left aside, from its index state
(sessionindex.py): its ok alone does not say a log was indexed.

A bxctl killed while it writes one (SIGKILL, a power cut: no cleanup runs) leaves its temporary
file, a partial copy of a log, which nothing else would ever remove, and the folder it made for
it. So every restore first removes those left in sessions/<ID>/, and the folder when they were
all it held (clear_leftovers), while no other bxctl lays: a bxctl holds
a shared lock (flock) on sessions/ all the while it lays, and the leftovers are removed only under
the exclusive one, so a running restore's file is never taken.
"""

import contextlib
import fcntl
import gzip
import os
import re
import stat
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from bxctl.handover import owner_of
from bxctl.reach import LAYING
from bxctl.sessionarchive import (
    LOG,
    Unusable,
    free_for,
    hash_of,
    members,
    name_problem,
    open_archive,
    survey,
)
from proto.messages import is_session_id

SHOWN = 20  # refusals named one a line; the rest are counted
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# The temporary file _write_in makes beside a log it lays (and only it: loopd appends in place).
LEFTOVER = re.compile(rf"\A\.{re.escape(LOG)}\.[0-9a-f]{{12}}\.tmp\Z")


@dataclass
class Laid:
    laid: list[str] = field(default_factory=list)  # the session ids laid
    kept: int = 0  # logs the home already had
    refused: list[str] = field(default_factory=list)  # "NAME: why", one each
    problem: str | None = None  # why none were laid
    indexed: str = ""  # what memoryd did with the laid ones
    cleared: int = 0  # partial copies a killed restore left, removed
    forgotten: int = 0  # logs the home lacks left out: each holds a record the owner had forgotten


def _open_sessions(home: Path) -> tuple[int, tuple[int, int] | None]:
    """{home}/sessions/ opened (made 0700 when missing, as the user of backups/ would), and whom
    what is laid there belongs to."""
    folder = home / "sessions"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    else:
        try:
            owner = owner_of(os.stat(home / "backups"))
        except OSError:
            owner = None
        fd = os.open(folder, _DIR)
        os.fchmod(fd, 0o700)
        if owner is not None:
            os.fchown(fd, *owner)
        os.close(fd)
        _fsync_dir(home)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Unusable(
            f"{folder} cannot be written here (it is read only, or another user's: under rootful "
            "podman run bxctl as root on the host)"
        )
    fd = os.open(folder, _DIR)
    return fd, owner_of(os.fstat(fd))


def _fsync_dir(path) -> None:
    fd = os.open(path, _DIR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _locked(sfd: int, done: Laid) -> None:
    """Hold sessions/ (sfd) shared for the laying, the leftovers removed first when no other
    bxctl lays (its exclusive lock free)."""
    try:
        fcntl.flock(sfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another bxctl lays: its temporary files may be in use
        pass
    else:
        try:
            done.cleared = clear_leftovers(sfd)
        except OSError:  # what cannot be removed now, the next restore tries again
            pass
    fcntl.flock(sfd, fcntl.LOCK_SH)


def clear_leftovers(sfd: int) -> int:
    """Remove the temporary files a killed bxctl left in the folders of sessions/ (sfd, held
    exclusive), and a folder they leave empty; how many files. A folder or file that is a link,
    or not what bxctl makes, is left."""
    cleared = 0
    for session in os.listdir(sfd):
        if not is_session_id(session):
            continue
        try:
            dfd = os.open(session, _DIR, dir_fd=sfd)
        except OSError:  # a log's folder that is a link or a file is loopd's user's, not bxctl's
            continue
        try:
            removed = _clear_in(dfd)
            cleared += removed
            if removed and not os.listdir(dfd):
                # The folder the killed restore made for that copy: nothing of a session is in
                # it. Removed by name, so only while it is empty.
                os.rmdir(session, dir_fd=sfd)
        except OSError:  # a folder bxctl may not list or change: it lays nothing there either
            pass
        finally:
            os.close(dfd)
    return cleared


def _clear_in(dfd: int) -> int:
    cleared = 0
    for name in os.listdir(dfd):
        if not LEFTOVER.fullmatch(name):
            continue
        try:
            if stat.S_ISREG(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=dfd)
                cleared += 1
        except FileNotFoundError:  # removed meanwhile
            pass
    return cleared


def tidy(home: Path) -> int:
    """The leftovers of clear_leftovers removed from home's sessions/, for a restore that lays no
    log; how many (0 when there is no sessions/ or another bxctl lays)."""
    try:
        sfd = os.open(home / "sessions", _DIR)
    except OSError:
        return 0
    try:
        fcntl.flock(sfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return clear_leftovers(sfd)
    except OSError:  # another bxctl lays, or a folder cannot be read: the next restore tries
        return 0
    finally:
        os.close(sfd)


def _there(sfd: int, session: str) -> bool:
    """Whether the home has something at sessions/<session>/0.jsonl (or at the folder's name, where
    it is not a folder): loopd's, kept as it is."""
    try:
        st = os.stat(session, dir_fd=sfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return True
    try:
        os.stat(f"{session}/{LOG}", dir_fd=sfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _write(sfd: int, session: str, source, want: tuple[int, str], owner) -> str | None:
    """Lay source as sessions/<session>/0.jsonl: None when laid, "kept" when a log came there
    meanwhile, or why not. A folder made for it is removed again when it is not laid."""
    made = False
    try:
        os.mkdir(session, 0o700, dir_fd=sfd)
        made = True
    except FileExistsError:
        pass
    outcome: str | None = "not laid"
    try:
        dfd = os.open(session, _DIR, dir_fd=sfd)
        try:
            if made:
                os.fchmod(dfd, 0o700)
                if owner is not None:
                    os.fchown(dfd, *owner)
            outcome = _write_in(dfd, source, want, owner)
            if made and outcome is None:
                try:
                    os.fsync(sfd)
                except OSError:
                    outcome = "not laid"  # its folder taken back too, below
                    with contextlib.suppress(OSError):
                        os.unlink(LOG, dir_fd=dfd)
                    raise
        finally:
            os.close(dfd)
    finally:
        if made and outcome is not None:
            try:
                os.rmdir(session, dir_fd=sfd)
            except OSError:
                pass
    return outcome


def _write_in(dfd: int, source, want: tuple[int, str], owner) -> str | None:
    """_write's file, in its folder dfd: a temporary name, fsync'd, linked to 0.jsonl."""
    tmp = f".{LOG}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
    try:
        try:
            os.fchmod(fd, 0o600)
            if owner is not None:
                os.fchown(fd, *owner)
            got = hash_of(source, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        if got != want:
            return "changed while it was read (its size and sha256 no longer match the manifest)"
        try:
            os.link(tmp, LOG, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            return "kept"
    finally:
        os.unlink(tmp, dir_fd=dfd)
    try:
        os.fsync(dfd)
    except OSError:
        # Not laid until its folder is synced: the log is taken back, so the refusal said of
        # this error is true.
        with contextlib.suppress(OSError):
            os.unlink(LOG, dir_fd=dfd)
        raise
    return None


def lay(
    archive: Path, home: Path, counts: object = None, forgot: frozenset[str] = frozenset()
) -> Laid:
    """Lay the session logs of archive that home lacks, but those of the sessions in forgot
    (memoryd's answer: each holds a record the owner made it forget); counts (memoryd's answer)
    must be the archive's, or it is not the one memoryd restored."""
    done = Laid()
    try:
        with open_archive(archive) as raw:
            free = free_for(home)  # the archive declares its size: no more than this is taken
            manifest, found = survey(raw, free)
            if counts is not None and counts != manifest.get("counts", {}):
                raise Unusable("the archive is not the one memoryd restored (it changed since)")
            sfd, owner = _open_sessions(home)
            try:
                _locked(sfd, done)
                todo = _plan(manifest, found, sfd, done, forgot)
                LAYING.total, LAYING.lacked = len(todo), True
                if todo:
                    _lay_all(raw, sfd, todo, owner, done, free)
            finally:
                os.close(sfd)
    except Unusable as e:
        done.problem = str(e)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        done.problem = f"the archive is truncated or damaged ({e})"
    except tarfile.TarError as e:
        done.problem = f"the archive is not a readable tar.gz ({e})"
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        done.problem = f"{e.strerror or e}{where}"
    return done


def _shown(name: str) -> str:
    """A member's name as a refusal line shows it: quoted, escaped, at most 120 characters."""
    return repr(name[:120])


def _plan(
    manifest: dict, found: dict, sfd: int, done: Laid, forgot: frozenset[str] = frozenset()
) -> dict[str, tuple[int, str]]:
    """The members to lay, with the size and sha256 each must have; done counts the others."""
    listed = {f["path"]: (f["size"], f["sha256"]) for f in manifest["files"]}
    todo = {}
    for name, got in found.items():
        if isinstance(got, str):
            done.refused.append(f"{_shown(name)}: {got}")
        elif name not in listed:
            done.refused.append(f"{_shown(name)}: not listed in the manifest")
        elif got != listed[name]:
            done.refused.append(
                f"{_shown(name)}: does not match its size and sha256 in the manifest"
            )
        elif _there(sfd, name.split("/")[1]):
            done.kept += 1
        elif name.split("/")[1] in forgot:
            done.forgotten += 1  # the home lacks it: laid, it would bring a forgotten text back
        else:
            todo[name] = got
    for name in listed:
        if name.startswith("sessions/") and name not in found:
            done.refused.append(f"{_shown(name)}: listed in the manifest, missing from the archive")
    return todo


def _lay_all(raw, sfd: int, todo: dict, owner, done: Laid, free: int | None = None) -> None:
    """Lay each member of todo; LAYING counts the logs laid, for the line an interrupt prints."""
    session = None  # the one being laid
    try:
        for member, tar in members(raw, free):
            want = todo.pop(member.name, None)
            if want is None:
                continue
            session = member.name.split("/")[1]
            _lay_one(tar, member, sfd, session, want, owner, done)
            session = None
    except KeyboardInterrupt:
        # a log linked whole just before the interrupt came is laid, and counted so
        if session is not None and session not in done.laid[-1:] and _there(sfd, session):
            LAYING.laid = len(done.laid) + 1
        raise
    for name in todo:
        done.refused.append(f"{_shown(name)}: gone from the archive on the second read")


def _lay_one(tar, member, sfd: int, session: str, want: tuple[int, str], owner, done: Laid):
    source = None if name_problem(member) else tar.extractfile(member)
    try:
        why = "cannot be read" if source is None else _write(sfd, session, source, want, owner)
    except OSError as e:
        why = f"cannot be written: {e.strerror or e}"
    if why is None:
        done.laid.append(session)
        LAYING.laid = len(done.laid)
    elif why == "kept":
        done.kept += 1
    else:
        done.refused.append(f"{_shown(member.name)}: {why}")
