"""Which of {home}'s files are memoryd's own data, as a backup holds them and a restore lays them.

The memory files (soul.md, memory.md, user.md, notes.md, pending.jsonl, forgotten.jsonl), every
month of the edit journal and of the recall log, and, when asked, the session logs recall reads
(loopd's, read only). The index is derived from sessions/ and notes.md and is left out. Archives
and exports go to {home}/backups/ (0700), a folder memoryd owns beside memory/ (compose mounts it):
a reply frame holds at most 1 MiB, so a file, not a reply, carries them to the owner.
"""

import os
import re
from pathlib import Path

from memoryd.home import MONTH_FILE, Home
from memoryd.journal import forgotten
from proto.messages import SESSION_ID_PATTERN

ROOT_FILES = ("soul.md", "memory.md", "user.md", "notes.md", "pending.jsonl", forgotten.FILE)
_SESSION = SESSION_ID_PATTERN.strip("^$")
MEMBER = re.compile(
    r"^(?:memory/(?:soul\.md|memory\.md|user\.md|notes\.md|pending\.jsonl|forgotten\.jsonl)"
    r"|memory/(?:edits|recalls)/\d{4}-\d{2}\.jsonl"
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


def session_files(home: Home) -> list[tuple[str, Path]]:
    """(name in the archive, path) of every session log recall reads."""
    from memoryd.index.newindex import indexable_sessions

    return [(f"sessions/{s}/0.jsonl", home.session_log(s)) for s in indexable_sessions(home)]


def target(home: Home, member: str) -> Path:
    """Where an archive member goes under {home}; member matched MEMBER."""
    return home.root.joinpath(*member.split("/"))
