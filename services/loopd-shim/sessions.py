"""The sessions folder: each session's frozen baseline and its append-only log.

sessions/{session}/0.baseline.json is written once, when the session starts, and never again: a
restarted loopd-shim replays it, so a memory write never reaches a session already running. The
folder is built under a temporary name and renamed into place with its baseline, so a start killed
part way never leaves a session folder without one (sessionfolder.py: what stands there, and the
leftovers of a start that never finished).
sessions/{session}/0.jsonl holds one record a line. A last line without its newline was cut off
by a crash in the middle of an append: it never became a record, so before appending we cut it
away (and log it) rather than glue the next record onto it. A record the log could not take
when its turn ran is owed: kept here and written before the session's next record, so the log
never holds a call that reads as unanswered once it has room again (turnlog.py).
"""

import errno
import json
import logging
import os
import secrets
import shutil
from pathlib import Path

from loopd_shim import sessionfolder
from loopd_shim.errors import AppendFailed, SessionExists, SessionLogFailed, SessionUnknown
from loopd_shim.logroom import reason_of
from proto import jsonread
from proto.files import (
    DIR_MODE,
    NotRegular,
    atomic_write,
    create_if_missing,
    ensure_dir,
    fsync_dir,
    open_file,
)
from proto.frames import MAX_FRAME
from proto.messages import is_session_id
from proto.records import Record, append_session_record, now_rfc3339

BASELINE = sessionfolder.BASELINE
LOG = sessionfolder.LOG
_TAIL_CHUNK = 65536
# A baseline goes back whole in one reply frame; a larger file was not written by loopd-shim.
BASELINE_BYTES = MAX_FRAME

# The errors that mean the disk (or the owner's quota, or the file size limit) has no room.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# What rename(2) of a folder says when something other than an empty folder stands at its target.
_TAKEN = frozenset({errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR})

log = logging.getLogger("loopd_shim.sessions")


def _not_created(session: str, path: Path, e: OSError) -> SessionLogFailed:
    """One line for a session whose files cannot be made: what, where, and that nothing started
    (the folder is removed, so a start once the cause is gone begins afresh)."""
    if isinstance(e, NotRegular):
        return SessionLogFailed(f"cannot create session {session}: {e}; nothing was started")
    if e.errno in DISK_FULL:
        return SessionLogFailed(
            f"the disk is full: cannot create the session log {path}; nothing was started "
            "(free some room, then start the session again)"
        )
    return SessionLogFailed(
        f"cannot create the session log {path}: {e.strerror or e}; nothing was started"
    )


def assemble_system(system_md: str, block: str) -> str:
    """The whole system prompt: system.md, a blank line, the memory block (spec 4, 9)."""
    return system_md.rstrip("\n") + "\n\n" + block


def cut_partial_tail(path: Path) -> int:
    """Cut a last line that lacks its newline; the number of bytes cut (0 when none).

    The log is opened as every file of the home is (proto.files.open_file): a symbolic link there
    is refused, not followed, so the cut can never reach a file outside the home; a FIFO or a
    device is refused (NotRegular) without being waited on."""
    try:
        fd = open_file(path, os.O_RDWR)
    except FileNotFoundError:
        return 0
    with os.fdopen(fd, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        keep, end = 0, size
        while end > 0:
            start = max(0, end - _TAIL_CHUNK)
            f.seek(start)
            newline = f.read(end - start).rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            end = start
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
    return size - keep


class SessionStore:
    """The session folders under {home}/sessions."""

    def __init__(self, root: Path):
        self.root = root
        # Per session, the records its log could not take yet, in the order they are owed.
        self._owed: dict[str, list[Record]] = {}

    def folder(self, session: str) -> Path:
        if not is_session_id(session):
            raise SessionUnknown(f"{session[:64]!r} is not a session id")
        return self.root / session

    def baseline_path(self, session: str) -> Path:
        return self.folder(session) / BASELINE

    def log_path(self, session: str) -> Path:
        return self.folder(session) / LOG

    def refused(self, session: str) -> str | None:
        """Why a start of session would be refused (what stands at its folder), or None when it
        may start: nothing there, or a folder a start that never finished left."""
        folder = self.folder(session)
        kind = sessionfolder.standing(folder)
        if kind in (sessionfolder.NONE, sessionfolder.CUT_SHORT):
            return None
        return sessionfolder.refusal(session, folder, kind)

    def create(self, session: str, system: str, tools: list[dict]) -> dict:
        """Write a new session's baseline and empty log; SessionExists if something stands at its
        folder but a start that never finished (sessionfolder.py).

        The folder is built under a temporary name and renamed into place once its baseline is
        written and fsync'd, so a kill at any point leaves the session whole or not there at all.
        A file that cannot be made (a full disk, a read-only home) is SessionLogFailed, one line,
        with the folder removed: nothing of the session is left half made."""
        folder = self.folder(session)
        try:
            ensure_dir(self.root)
            kind = sessionfolder.standing(folder)
            if kind == sessionfolder.CUT_SHORT:
                sessionfolder.empty_cut_short(session, folder)
            elif kind != sessionfolder.NONE:
                raise SessionExists(sessionfolder.refusal(session, folder, kind))
            building = self.root / sessionfolder.temp_name(session, secrets.token_hex(6))
            building.mkdir(mode=DIR_MODE)
        except OSError as e:
            raise _not_created(session, folder / LOG, e) from None
        baseline = {"session": session, "created": now_rfc3339(), "system": system, "tools": tools}
        data = json.dumps(baseline, ensure_ascii=False, indent=1).encode("utf-8") + b"\n"
        placed = False
        try:
            os.chmod(building, DIR_MODE)
            atomic_write(building / BASELINE, data)
            try:
                # Replaces an empty folder (a start cut short), never one holding anything.
                os.rename(building, folder)
            except OSError as e:
                if e.errno not in _TAKEN:
                    raise
                kind = sessionfolder.standing(folder)
                raise SessionExists(sessionfolder.refusal(session, folder, kind)) from None
            placed = True
            create_if_missing(folder / LOG)
            fsync_dir(self.root)
        except BaseException as e:
            shutil.rmtree(folder if placed else building, ignore_errors=True)
            if isinstance(e, OSError):
                raise _not_created(session, folder / LOG, e) from None
            raise
        log.info(
            "session %s: baseline written (%d characters of system prompt)", session, len(system)
        )
        return baseline

    def baseline(self, session: str) -> dict:
        """The saved baseline; SessionUnknown when the session was never started."""
        path = self.baseline_path(session)
        try:
            fd = open_file(path, os.O_RDONLY)
        except FileNotFoundError:
            raise SessionUnknown(sessionfolder.unknown(session, self.folder(session))) from None
        with os.fdopen(fd, "rb") as f:
            data = f.read(BASELINE_BYTES + 1)
        if len(data) > BASELINE_BYTES:
            raise SessionLogFailed(f"{path} is larger than {BASELINE_BYTES:,} bytes")
        try:
            value = jsonread.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, jsonread.NotJson) as e:
            raise SessionLogFailed(f"{path} is not a baseline loopd-shim writes: {e}") from None
        if not isinstance(value, dict):
            raise SessionLogFailed(f"{path} is not a baseline loopd-shim writes: not an object")
        return value

    def require(self, session: str) -> None:
        if not self.baseline_path(session).is_file():
            raise SessionUnknown(sessionfolder.unknown(session, self.folder(session)))

    def owe(self, session: str, record: Record) -> None:
        """Keep record to be written before the session's next one: the log cannot take it now."""
        self._owed.setdefault(session, []).append(record)
        log.warning(
            "session %s: a record the log could not take is kept to be written before its next"
            " (%d owed); it is lost if loopd-shim stops first",
            session,
            len(self._owed[session]),
        )

    def owes(self, session: str) -> bool:
        return bool(self._owed.get(session))

    def append(self, session: str, record: Record) -> None:
        """Append one record to the session's log, after cutting a half-written last line and
        writing the records owed to it; AppendFailed, one line, when the log cannot take them."""
        path = self.log_path(session)
        owed = self._owed.get(session, [])
        try:
            cut = cut_partial_tail(path)
            if cut:
                log.warning(
                    "%s: cut a half-written last line of %d bytes (left by a crash)", path, cut
                )
            while owed:
                append_session_record(path, owed[0])
                owed.pop(0)
                log.info("session %s: wrote a record owed to its log", session)
            self._owed.pop(session, None)
            append_session_record(path, record)
        except OSError as e:
            still = f" ({len(owed)} records of an earlier turn still wait to be written there)"
            raise AppendFailed(
                f"session {session}: cannot append to {path}: {e.strerror or e}"
                + (still if owed else ""),
                reason_of(e),
            ) from None
