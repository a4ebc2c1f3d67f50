"""A soul.md missing at start, told apart: a new home's first start, or the owner's soul lost.

memoryd's start writes the starter soul (soul.md of the settings) where soul.md is missing, so that
no session starts without one. In a new home that is all there is to say ("created"). In a home
that already holds memory (entries, notes, a journal or the edit ids it handed out, a recall log,
session logs, archives in backups/) a soul.md was there and has been removed (a cleaner, a sync
tool, a hand rm): soul.md has no journal, so the starter written in its place would replace the
owner's unseen. That start warns, naming the file and how to put the owner's back from a backup
(runbook memory-unavailable, step 4 says the same). When more than soul.md is gone, memorygone.py
says it all in one line instead.
"""

import logging
import os
from pathlib import Path

from memoryd.data import layout
from memoryd.home import Home
from memoryd.journal.ids import Issued
from memoryd.memory import memorygone
from proto.messages import is_session_id

log = logging.getLogger("memoryd.memory.store")


def held(home: Home) -> str | None:
    """What of memory the home holds beside soul.md, in a few words (None: a new home)."""
    found: list[str] = []
    try:
        what = layout.held(home, None)
    except OSError as e:  # a folder memoryd cannot list holds something
        what = f"{e.filename or home.memory} (which cannot be read)"
    if what:
        found.append(what)
    if "an edit journal" not in (what or "") and Issued(home).last("edit") is not None:
        found.append("edit ids handed out")
    if _has_sessions(home):
        found.append("session logs")
    if memorygone.newest_archive(home) is not None:
        found.append(f"archives in {layout.backups(home)}")
    return ", ".join(found) or None


def _has_sessions(home: Home) -> bool:
    try:
        with os.scandir(home.sessions) as entries:
            return any(
                is_session_id(entry.name) and os.path.lexists(Path(entry.path) / "0.jsonl")
                for entry in entries
            )
    except OSError:
        return False


def say(home: Home, holds: str) -> None:
    """The warning for a starter written where the owner's soul.md was."""
    soul = home.memory_file("soul.md")
    log.warning(
        "%s: missing in a home that holds memory (%s), so it was removed, not new; memoryd wrote "
        "the starter soul in its place so that sessions start. To have yours back, take it from "
        "your newest backup: tar -xzf ARCHIVE memory/soul.md, run in %s (ARCHIVE in %s or a copy "
        "you keep elsewhere; sessions started after get it) (runbook: memory-unavailable)",
        soul,
        holds,
        home.root,
        layout.backups(home),
    )
