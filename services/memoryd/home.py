"""The layout of {home} as memoryd sees it, with the safe ways to read and write (proto.files).

memoryd writes only through these: atomic_write replaces a file whole (temp file, fsync, rename,
fsync the folder); append_bytes/append_line/append_lines add to a journal and fsync. Folders 0700,
files 0600 (spec 3, 6). It reads its own files through read_file/open_read. None of them follows a
symbolic link or opens anything but a regular file (NotRegular); unsafe_entry finds, at start, a
link or a non-regular file where memoryd keeps its own.

A file memoryd writes in place must be its own alone: one hard-linked to a file outside {home}
(a home copied with cp -al or rsync -H, a link made by hand) would take every append there too.
The start gives such a file a copy of its own (owncopy.py); unsafe_entry refuses one it could not,
and the appends refuse one linked while memoryd runs (NotRegular, naming it), before a byte is
written. The files memoryd replaces whole by rename (memory.md, user.md,
soul.md) break such a link at their next write, and their second link may be memoryd's own (a
kept copy of the old bytes for the length of an edit, journal/rollback.py), so they are let be.
"""

import datetime as dt
import glob
import logging
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from proto import files
from proto.files import (  # noqa: F401  (memoryd writes through these)
    DIR_MODE,
    FILE_MODE,
    NotRegular,
    atomic_write,
    check_entry,
    create_if_missing,
    ensure_dir,
    fsync_dir,
    open_file,
    open_read,
    read_file,
)

log = logging.getLogger(__name__)


def append_bytes(path: str | os.PathLike, data: bytes) -> None:
    """proto.files.append_bytes to a file of memoryd's own: refused with another hard link."""
    files.append_bytes(path, data, own=True)


def append_line(path: str | os.PathLike, line: str) -> None:
    """proto.files.append_line to a file of memoryd's own: refused with another hard link."""
    files.append_line(path, line, own=True)


def append_lines(path: str | os.PathLike, lines: list[str]) -> None:
    """Append lines, each on a line of its own (none may hold a newline), in one write and one
    fsync, as append_line appends one: a forget listing the keys of tens of thousands of records
    that held its text must not pay a write and an fsync for each. Nothing for no lines. A write
    cut short is taken back whole (append_line); a crash may keep only the first of them, the last
    of those torn."""
    if lines:
        append_line(path, "\n".join(lines))


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def index_db(self) -> Path:
        return self.index_dir / "memory.sqlite3"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def run(self) -> Path:
        return self.root / "run"

    def memory_file(self, name: str) -> Path:
        """soul.md, memory.md, user.md, notes.md or pending.jsonl."""
        return self.memory / name

    @property
    def edits(self) -> Path:
        return self.memory / "edits"

    @property
    def recalls(self) -> Path:
        return self.memory / "recalls"

    def edits_month(self, when: dt.datetime) -> Path:
        return self.edits / f"{when:%Y-%m}.jsonl"

    def recalls_month(self, when: dt.datetime) -> Path:
        return self.recalls / f"{when:%Y-%m}.jsonl"

    def session_log(self, session: str) -> Path:
        """The log of a session whose id the caller has already validated."""
        return self.sessions / session / "0.jsonl"

    def owned_entries(self) -> list[tuple[Path, bool]]:
        """(path, is a folder) of everything memoryd keeps in {home}, as far as it exists now."""
        folders = [self.memory, self.edits, self.recalls, self.index_dir]
        files = [self.memory_file(name) for name in MEMORY_FILES]
        files += [self.index_dir / name for name in INDEX_FILES]
        for folder in (self.edits, self.recalls):
            try:
                files += [folder / n for n in sorted(os.listdir(folder)) if MONTH_FILE.match(n)]
            except (FileNotFoundError, NotADirectoryError):
                pass
        return [(p, True) for p in folders] + [(p, False) for p in files]


# forgotten.jsonl (journal/forgotten.py), labels.jsonl (trust/risen.py), .writing.json
# (memory/handedit.py), .forgetting.json (data/unfinished.py) and .ids.json (journal/journal.py)
# are read at start or by the next command too: a FIFO, folder or link there refuses the start
# like one at notes.md, rather than hanging it or failing later without a name.
MEMORY_FILES = (
    "soul.md",
    "memory.md",
    "user.md",
    "notes.md",
    "pending.jsonl",
    "forgotten.jsonl",
    "labels.jsonl",
    ".writing.json",
    ".forgetting.json",
    ".ids.json",
)
INDEX_FILES = (
    "memory.sqlite3",
    "memory.sqlite3-wal",
    "memory.sqlite3-shm",
    "memory.sqlite3-journal",
    "memory.sqlite3.carry",
    "memory.sqlite3.merge-owed",
    "memory.sqlite3.wal-owed",
    "memoryd.lock",
)
MONTH_FILE = re.compile(r"^[0-9]{4}-[0-9]{2}\.jsonl\Z")
# What memoryd writes in place, beside the journal's and the recall log's months: the appended
# files, the write intent (rewritten in place, memory/writeintent.py) and SQLite's.
IN_PLACE = frozenset(
    {
        "notes.md",
        "pending.jsonl",
        "forgotten.jsonl",
        "labels.jsonl",
        ".writing.json",
        "memory.sqlite3",
        "memory.sqlite3-wal",
        "memory.sqlite3-shm",
        "memory.sqlite3-journal",
    }
)


def written_in_place(home: Home, path: Path) -> bool:
    return path.name in IN_PLACE or path.parent in (home.edits, home.recalls)


def unsafe_entry(home: Home, links: bool = True) -> OSError | None:
    """The first of memoryd's own paths that is a symbolic link or not what it should be
    (NotRegular), or that cannot be looked at (a folder without permission: the OSError, its
    filename set). With links, a file memoryd writes in place with a hard link other than its own
    leftovers (own_links) is NotRegular too."""
    try:
        entries = home.owned_entries()
    except OSError as e:
        return e
    for path, folder in entries:
        try:
            check_entry(path, folder=folder)
            if links and not folder and written_in_place(home, path):
                _check_links(path)
        except OSError as e:
            return e
    return None


def _check_links(path: Path) -> None:
    """Refuse (NotRegular) a file with hard links besides memoryd's own leftovers of it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 + len(own_links(path, st)):
        raise files.refuse(path, files.hard_links(st))


def own_links(path: Path, st: os.stat_result) -> list[Path]:
    """The other names of the file at path (st) that are memoryd's own: a temporary file of its
    (.NAME.XXXX.tmp beside it) that a crash left linked to it, as create_if_missing links one in
    place before removing it. The start removes them after its check (remove_stale_temp_files)."""
    found = []
    for other in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            o = os.lstat(other)
        except FileNotFoundError:
            continue
        if (o.st_dev, o.st_ino) == (st.st_dev, st.st_ino):
            found.append(other)
    return found


def tighten_files(home: Home) -> None:
    """At start, before the index is opened (closing a descriptor of an SQLite file memoryd holds
    open would drop its locks): every regular file memoryd owns made 0600 through its own
    O_NOFOLLOW descriptor, each one changed logged (spec 3: files 0600; an editor's save, a cp
    or a restore by hand leaves 0644). One that is not a regular file is the start check's; one
    with another hard link is left as it is (its mode is the other name's too)."""
    for path, folder in home.owned_entries():
        if folder:
            continue
        try:
            fd = open_file(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        except OSError as e:
            log.warning("%s: cannot be looked at to set its mode: %s", path, e.strerror or e)
            continue
        try:
            was = files.tighten(fd)
        except OSError as e:
            log.warning("%s: cannot be made 0600: %s", path, e.strerror or e)
            continue
        finally:
            os.close(fd)
        if was is not None:
            log.info("%s: mode %04o set to %04o, as memoryd's files are", path, was, FILE_MODE)


def tree_size(path: str | Path) -> int:
    """What the regular files under path take, links neither followed nor counted; a folder
    that cannot be read counts what was read of it (what stats shows of a home's folders)."""
    total = 0
    try:
        with os.scandir(path) as it:
            for item in it:
                if item.is_dir(follow_symlinks=False):
                    total += tree_size(item.path)
                elif item.is_file(follow_symlinks=False):
                    total += item.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total
