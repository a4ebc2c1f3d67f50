"""What stands at sessions/{session}, and the leftovers of a session start that never finished.

A session starts when its folder holds its baseline. sessions.py builds that folder under a
temporary name in sessions/ (TEMP: a dot first, so never a session id, and never holding a log,
so neither memoryd's indexer nor bxctl's restore takes it for a session), writes and fsyncs the
baseline in it, and renames it into place. A loopd-shim killed (SIGKILL, the OOM killer, a stop
past its grace) at any point of a start so leaves either the whole session or a temporary folder,
which the next serve removes under its lock (clear_leftovers) before it answers anything.

A folder at sessions/{session} holding neither baseline nor log -- empty, or with only the
baseline's temporary file -- is what a start killed by an older loopd-shim (which made the folder
first) or a restore killed right after its mkdir leaves: nothing of a session is in it, so a start
of that id takes it (the rename replaces an empty folder, and only an empty one), and a message to
it says the session was never started. Every refusal says what stands there.
"""

import logging
import os
import re
import shutil
import stat
from pathlib import Path

from proto.files import what_stands
from proto.messages import SESSION_ID_PATTERN

BASELINE = "0.baseline.json"
LOG = "0.jsonl"
# The folder a start builds before it renames it to the session's name.
TEMP = re.compile(rf"\A\.(?P<session>{SESSION_ID_PATTERN.strip('^$')})\.[0-9a-f]{{12}}\.tmp\Z")
# The temporary file proto.files.atomic_write makes beside a baseline it writes.
BASELINE_TEMP = re.compile(r"\A\.0\.baseline\.json\.[0-9a-f]{12}\.tmp\Z")

# What stands at sessions/{session}.
NONE = "none"  # nothing: the session was never started
STARTED = "started"  # its baseline: a session (its log is made at its first record if missing)
LOG_ONLY = "log only"  # a log without a baseline: restored, or the baseline removed
CUT_SHORT = "cut short"  # a folder with neither: a start (or a restore) that never finished
OTHER = "other"  # not a folder, or a folder holding files loopd-shim never makes there

log = logging.getLogger("loopd_shim.sessions")


def temp_name(session: str, token: str) -> str:
    """The name a start of session builds its folder under (token: 12 hex digits)."""
    return f".{session}.{token}.tmp"


def standing(folder: Path) -> str:
    """What stands at folder, the session's place in sessions/ (one of the names above)."""
    try:
        st = folder.lstat()
    except FileNotFoundError:
        return NONE
    if not stat.S_ISDIR(st.st_mode):
        return OTHER
    names = os.listdir(folder)
    if BASELINE in names:
        return STARTED
    if LOG in names:
        return LOG_ONLY
    return CUT_SHORT if all(BASELINE_TEMP.fullmatch(n) for n in names) else OTHER


def _other(folder: Path) -> str:
    """What stands at folder when it is neither a session nor a start cut short."""
    try:
        st = folder.lstat()
    except OSError:
        return "changed while it was looked at"
    if not stat.S_ISDIR(st.st_mode):
        return f"is {what_stands(st, folder=True)}"
    return "holds neither baseline nor log, but files loopd-shim does not make"


def refusal(session: str, folder: Path, kind: str) -> str:
    """Why a start of session is refused, kind standing at folder."""
    if kind in (NONE, CUT_SHORT):  # only when another made or removed it in the meantime
        return f"session {session} was not started: {folder} changed meanwhile; start it again"
    if kind == STARTED:
        return f"session {session} exists; a session's baseline is never rebuilt"
    if kind == LOG_ONLY:
        return (
            f"session {session} exists: its folder holds a log but no baseline (restored from a "
            f"backup, or its {BASELINE} removed), so it is never started again: start a new "
            "session (recall finds what this one said)"
        )
    return (
        f"session {session} cannot be started: {folder} {_other(folder)}; move it away, then "
        "start the session again"
    )


def unknown(session: str, folder: Path) -> str:
    """Why a message to session, which has no baseline, is refused: what stands at folder."""
    kind = standing(folder)
    start = f"loopd-shim start --session {session}"
    if kind == LOG_ONLY:
        return (
            f"session {session} has a log but no baseline (restored from a backup, or its "
            f"{BASELINE} removed), so it cannot be continued: start a new session (recall "
            "finds what this one said)"
        )
    if kind == CUT_SHORT:
        return (
            f"session {session} was never started: its folder {folder} holds neither baseline "
            f"nor log (a start that never finished); start it with: {start}"
        )
    if kind == OTHER:
        return (
            f"session {session} was never started: {folder} {_other(folder)}; move it away, "
            f"then start it with: {start}"
        )
    return f"no session {session}; start it first with: {start}"


def empty_cut_short(session: str, folder: Path) -> None:
    """Remove the baseline's temporary files from a folder a start cut short left, so that the
    rename of the new session's folder can take its place (rename replaces only an empty one)."""
    removed = 0
    for name in os.listdir(folder):
        if BASELINE_TEMP.fullmatch(name):
            (folder / name).unlink(missing_ok=True)
            removed += 1
    held = f"only {removed} temporary file(s) of a baseline, removed" if removed else "empty"
    log.warning(
        "session %s: its folder %s held neither baseline nor log (%s): a start that never"
        " finished left it, and this start takes it",
        session,
        folder,
        held,
    )


def clear_leftovers(root: Path) -> int:
    """Remove the temporary folders of starts that never finished from sessions/ (root); how
    many. Called only while no start can run: by serve, under the home's lock, before it answers.
    A link or a file of that name is not loopd-shim's, and is left."""
    cleared = 0
    for name in os.listdir(root):
        found = TEMP.fullmatch(name)
        if found is None:
            continue
        path = root / name
        try:
            if not stat.S_ISDIR(path.lstat().st_mode):
                continue
            shutil.rmtree(path)
        except FileNotFoundError:
            continue
        cleared += 1
        log.warning(
            "%s: removed the folder of a start of session %s that never finished (loopd-shim was"
            " stopped before the session's folder was put in place; that session was never"
            " started)",
            path,
            found["session"],
        )
    return cleared
