"""Which of {home}'s files are memoryd's own data, as a backup holds them and a restore lays them.

The memory files (soul.md, memory.md, user.md, notes.md, pending.jsonl, forgotten.jsonl,
labels.jsonl: the sessions' labels memoryd has seen, trust/risen.py), every
month of the edit journal and of the recall log, and, when asked, the session logs recall reads
(loopd's, read only). The index is derived from sessions/ and notes.md and is left out. Archives
and exports go to {home}/backups/ (0700), a folder memoryd owns beside memory/ (compose mounts it):
a reply frame holds at most 1 MiB, so a file, not a reply, carries them to the owner.

A restore lays the archive's files over every one of these the home has and removes the others
(soul.md and the recall log included), so held() says what of them holds something the owner would
lose: a plain restore is refused while anything does (restore --replace backs it up first).
"""

import errno
import os
import re
import stat
from pathlib import Path

from memoryd.errors import MemorydError
from memoryd.home import MONTH_FILE, Home, NotRegular, check_entry, read_file
from memoryd.journal import forgotten
from memoryd.memory import entries
from memoryd.trust import risen
from proto.messages import SESSION_ID_PATTERN

ROOT_FILES = (
    "soul.md",
    "memory.md",
    "user.md",
    "notes.md",
    "pending.jsonl",
    forgotten.FILE,
    risen.FILE,
)
# The files memoryd makes at start (memory/store.py: ensure), so every backup of a home holds them;
# pending.jsonl, forgotten.jsonl and labels.jsonl come with the first write that needs them.
CORE = ("soul.md", "memory.md", "user.md", "notes.md")
FOLDERS = ("memory/", "memory/edits/", "memory/recalls/")  # as whole_files names them
_SESSION = SESSION_ID_PATTERN.strip("^$")
MEMBER = re.compile(
    r"^(?:memory/(?:soul\.md|memory\.md|user\.md|notes\.md|pending\.jsonl|forgotten\.jsonl"
    r"|labels\.jsonl)"
    r"|memory/(?:edits|recalls)/[0-9]{4}-[0-9]{2}\.jsonl"
    rf"|sessions/{_SESSION}/0\.jsonl)\Z"
)
# A file name the owner's commands may name in backups/: no folder, no leading dash. (\Z, not $:
# $ would let a name end in a newline.)
NAME = re.compile(r"^\.?[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def backups(home: Home) -> Path:
    return home.root / "backups"


def memory_files(home: Home) -> list[tuple[str, Path]]:
    """(name in the archive, path) of every memoryd file that exists now, in a fixed order."""
    out = []
    for name in ROOT_FILES:
        path = home.memory_file(name)
        if os.path.lexists(path):
            out.append((f"memory/{name}", path))
    for folder, sub in ((home.edits, "edits"), (home.recalls, "recalls")):
        try:
            names = sorted(n for n in os.listdir(folder) if MONTH_FILE.match(n))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        out += [(f"memory/{sub}/{n}", folder / n) for n in names]
    return out


def whole_files(home: Home, missing_ok: bool = False) -> list[tuple[str, Path]]:
    """memory_files as a backup must hold them: an OSError whose filename is the folder, named
    as the archive names it (memory/edits/), when memory/, its edits/ or recalls/ is not a folder
    memoryd may list (NotRegular for a link or a file there), or is missing and not missing_ok.
    (The CORE files are checked once held: snapshot.take.) Without this a backup of a home whose
    journal's folder was replaced by a file, or whose memory/ was removed, would hold nothing of
    them and say "backup written", and --keep would remove the older archives that did."""
    _folder(home.memory, "memory/", missing_ok)
    out = [(f"memory/{n}", home.memory_file(n)) for n in ROOT_FILES]
    out = [(name, path) for name, path in out if os.path.lexists(path)]
    for folder, sub in ((home.edits, "edits"), (home.recalls, "recalls")):
        names = _folder(folder, f"memory/{sub}/", missing_ok)
        out += [(f"memory/{sub}/{n}", folder / n) for n in sorted(filter(MONTH_FILE.match, names))]
    return out


def _folder(path: Path, name: str, missing_ok: bool) -> list[str]:
    """The names in the folder at path (a folder of memoryd's own: a link there is not followed);
    OSError with name as its filename when it cannot be listed, or is missing and not
    missing_ok."""
    try:
        check_entry(path, folder=True)
        return os.listdir(path)
    except NotRegular as e:
        raise NotRegular(e.errno, e.strerror, name) from None
    except FileNotFoundError:
        if missing_ok:
            return []
        raise FileNotFoundError(errno.ENOENT, "missing", name) from None
    except OSError as e:
        raise OSError(e.errno, e.strerror, name) from None


def session_files(home: Home, skipped: dict[str, str] | None = None) -> list[tuple[str, Path]]:
    """(name in the archive, path) of every session log recall reads; those it does not (a link,
    a FIFO, a log in a misnamed folder) by session folder in skipped, with why, when given: what
    a backup's answer counts as left out, as stats calls them left aside."""
    from memoryd.index.newindex import indexable_sessions

    found = indexable_sessions(home, skipped)
    return [(f"sessions/{s}/0.jsonl", home.session_log(s)) for s in found]


def target(home: Home, member: str) -> Path:
    """Where an archive member goes under {home}; member matched MEMBER."""
    return home.root.joinpath(*member.split("/"))


def held(home: Home, starter: bytes | None) -> str | None:
    """What of the home's memory a restore would replace or remove and the owner would lose,
    said in a few words, or None when nothing. Not lost: a file missing or empty, memory.md or
    user.md without entries, the soul.md starter memoryd wrote (starter; None when it cannot be
    read, and then any soul.md is the owner's), and forgotten.jsonl and labels.jsonl (a restore
    carries what they list over). What is not a regular file is left to the restore's own
    refusal."""
    found: list[str] = []
    for name, path in memory_files(home):
        rel = name.removeprefix("memory/")
        said = None if rel in (forgotten.FILE, risen.FILE) else _lost(home, rel, path, starter)
        if said is not None and said not in found:
            found.append(said)
    return ", ".join(found) or None


def _lost(home: Home, rel: str, path: Path, starter: bytes | None) -> str | None:
    """What the file holds that a restore would lose, in a few words (None: nothing)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):  # a folder or link there: the restore refuses it
            return None
        size = st.st_size
        if rel in ("memory.md", "user.md"):
            if size > entries.MAX_BYTES:  # never read whole past the limit: something is there
                return f"a {rel} of {size:,} bytes"
            n = len(_entries(home, rel))
            return f"{n:,} entr{'y' if n == 1 else 'ies'} in {rel}" if n else None
        if not size:
            return None
        if rel == "soul.md":
            # past any starter's size it is not read: the owner's
            mine = size > 1 << 20 or starter is None or read_file(path) != starter
            return "a soul.md other than the starter memoryd wrote" if mine else None
    except FileNotFoundError:  # removed meanwhile: nothing there to keep
        return None
    except (OSError, MemorydError):  # unreadable counts as something there
        return f"{rel} (which cannot be read)"
    if rel.startswith("edits/"):
        return "an edit journal"
    if rel.startswith("recalls/"):
        return "a recall log"
    return f"a non-empty {rel}"


def _entries(home: Home, name: str) -> list[str]:
    return entries.parse(entries.decode(read_file(home.memory_file(name)), name))
