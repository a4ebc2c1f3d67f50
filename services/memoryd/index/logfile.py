"""Which file a session log is, and whether it still holds the bytes the index read of it.

The index reads a log on from where it stopped only when the file is still the one it read: its
inode (file_of), or a copy of it with every byte read the same (logprefix.py, moved: a home copied
or moved with cp -a), and a hash of the bytes just before the offset unchanged (tail_hash,
still_valid). Kept apart from the reading itself (indexer.py), which asks these questions of each
log it reads on, and log_problem, which says why a log cannot be read at all.
"""

import hashlib
import logging
import os
import stat
from pathlib import Path

from memoryd.home import Home, open_read
from memoryd.index import logprefix
from memoryd.index.sessionrows import LogState
from proto.files import refuse, what_stands

# Logged under the indexer's name, as before these checks had a module of their own.
log = logging.getLogger("memoryd.index.indexer")

# How many bytes before a log's indexed offset the tail hash covers (a rewritten log is caught).
TAIL_HASH_BYTES = 256


def log_problem(home: Home, session: str, sessions: str | None = None) -> OSError | None:
    """Why a session's log cannot be indexed (FileNotFoundError when there is none), or None.
    Neither sessions/<id> nor its 0.jsonl may be a symbolic link: memoryd does not follow one.
    sessions: home.sessions as a string, when the caller asks of every session (two lstats a
    log, and no path objects: a home of 60,000 sessions is listed at every stats)."""
    base = os.fspath(home.sessions) if sessions is None else sessions
    folder = f"{base}/{session}"
    log = f"{folder}/0.jsonl"
    try:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            return refuse(folder, what_stands(st, folder=True))
        st = os.lstat(log)
        if not stat.S_ISREG(st.st_mode):
            return refuse(log, what_stands(st))
    except FileNotFoundError:
        return FileNotFoundError(f"no session {session}")
    except OSError as e:
        return e
    return None


def log_name(session: str) -> str:
    """The progress key of a session's log: its path relative to {home}."""
    return f"sessions/{session}/0.jsonl"


def file_of(path: Path, whole: bool = False) -> str | None:
    """Which file path is: its device and inode, and (whole) its size and times too; None when
    there is none. A session log only grows in place, so its inode says it is the file read; any
    change of notes.md shows in its size or times (ctime cannot be set back), and so does a change
    of its mode or owner alone, which the digest of its bytes tells apart (notesparts.py)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not whole:
        return f"{st.st_dev}:{st.st_ino}"
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def tail_hash(path: Path, offset: int, window: int | None = TAIL_HASH_BYTES) -> str:
    """The hash of the window bytes before offset (of all of them when window is None)."""
    start = 0 if window is None else max(0, offset - window)
    digest = hashlib.sha256()
    with open_read(path) as f:
        f.seek(start)
        left = offset - start
        while left > 0:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def still_valid(path: Path, state: LogState, window: int | None = TAIL_HASH_BYTES) -> bool:
    """True when the log still holds the bytes read so far, as far as the hash shows."""
    if os.path.getsize(path) < state.bytes:
        return False
    return tail_hash(path, state.bytes, window) == state.tail


# The homes whose logs were found moved (another inode, the bytes read unchanged): said once each.
_MOVED_SAID: set[str] = set()


def moved(home: Home, name: str, path: Path, state: LogState) -> bool:
    """Whether a log that is another file than was read (file_of) holds every byte read before
    the offset (logprefix.py): a home copied or moved, the index reads on from the offset. Said
    once a home, naming the first log found so, not once a log."""
    try:
        if os.path.getsize(path) < state.bytes:
            return False
    except OSError:
        return False
    if not logprefix.holds(path, state.prefix, state.bytes):
        return False
    root = os.fspath(home.root)
    if root not in _MOVED_SAID:
        _MOVED_SAID.add(root)
        log.info(
            "session logs of %s are other files than the index read, every byte it read the"
            " same (%s first): copied or moved (cp -a), each is read on from where the index"
            " stopped; said once for the home",
            root,
            name,
        )
    return True
