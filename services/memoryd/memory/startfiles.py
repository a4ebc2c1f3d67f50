"""What memoryd's start makes of {home}/memory/: the folders and the files missing, never one
overwritten (spec: it creates what is missing); soul.md from [memory] soul_starter.

In a new home what was made is logged as created. In a home that held memory, what was missing is
said in one warning with the way back instead (memorygone.py; soulgone.py for soul.md alone), and
asked before anything is made: once made, a file no longer shows that it was missing.

Why a module of its own: store.py changes memory/ while memoryd runs; this runs once, before the
first write, and only makes what is not there.
"""

import logging
from pathlib import Path

from memoryd.config import read_soul_starter
from memoryd.errors import StartFailed
from memoryd.home import Home, create_if_missing, ensure_dir
from memoryd.journal import ids as issued
from memoryd.memory import memorygone, soulgone

# The store's logger: its start's lines keep its name.
log = logging.getLogger("memoryd.memory.store")


def ensure(home: Home, soul_starter: Path | None) -> list[Path]:
    """Create memory/ and its files where missing (never overwriting); what was created. In a
    home that held memory, what was missing is said in one warning with the way back
    (memorygone.py), not as created."""
    created: list[Path] = []
    holds: str | None = None
    missing = memorygone.look(home)
    if missing.any():
        # Asked before anything is made: a new home holds nothing.
        holds = soulgone.held(home)
    try:
        for folder in (home.memory, home.edits, home.recalls):
            existed = folder.exists()
            ensure_dir(folder)
            if not existed:
                created.append(folder)
        soul = home.memory_file("soul.md")
        if not soul.exists():
            if soul_starter is None:
                raise StartFailed("soul.md is missing and no [memory] soul_starter is set")
            starter = read_soul_starter(soul_starter)
            if create_if_missing(soul, starter):
                created.append(soul)
        for name in ("memory.md", "user.md", "notes.md"):
            path = home.memory_file(name)
            if create_if_missing(path, b""):
                created.append(path)
    except OSError as e:
        where = e.filename or home.memory
        raise StartFailed(f"cannot create {where}: {e.strerror}") from e
    issued.remove_floor_leftovers(home)
    if holds is not None and missing.files == ["soul.md"] and not missing.journal:
        soulgone.say(home, holds)  # the soul alone: its own way back
    elif holds is not None:
        memorygone.say(home, missing, holds)
    else:
        for path in created:
            log.info("%s: created", path)
    return created
