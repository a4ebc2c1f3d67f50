"""Memory memoryd held, found gone at start: memory/ removed whole, or notes.md, memory.md, user.md
or the journal removed from it, in a home that shows it held memory (memory/soulgone.held: entries,
a journal or the edit ids handed out, session logs, archives in backups/).

memoryd's start makes what is missing anew so that sessions start (spec: it creates what is
missing), and in a new home that is all there is to say ("created"). Where memory was held, the
files made anew are empty and every session would start without what they held, so the start says
so in one warning naming each file missing and the way back, and the runbook entry it sends the
owner to says the same:

- memory/ removed whole (or every file of it): the newest archive in backups/ holds all of it,
  put back by `bxctl memory restore --replace ARCHIVE` (which backs up what the start made first);
- notes.md alone: not rebuilt from the journal's note lines. The journal does hold each note's
  text, time and session, but notes.md also holds what the owner wrote in by hand (the runbook's
  way to keep an entry findable) and the class of each moved entry is on no journal line, so a
  rebuild could not promise to be what notes.md held; an archive is notes.md byte for byte as of
  its time. So the way back is the newest archive's notes.md, and the notes journalled after it
  are counted and named (bxctl memory log lists them, show prints their text);
- memory.md or user.md alone: the start journals its loss as a hand edit that undo puts back
  (handedit.py), so only the journal's gone with it is worth a word here;
- the journal (edits/): runbook journal-lost.

While memoryd runs, notes.md removed is not made anew by the next write that appends to it (a
note, an untrusted add, an entry moved out of memory.md or user.md): that write is refused
(notes_there), as one to a missing memory.md is, since a new notes.md holding it alone would hide
the loss of every note before it; the owner puts notes.md back, or makes it empty to go on.

Why a module of its own: store.py's start only decides what to make; this says what was lost.
"""

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import layout
from memoryd.errors import FileInvalid
from memoryd.home import MONTH_FILE, Home
from memoryd.journal.ids import Issued
from proto.plural import counted

log = logging.getLogger("memoryd.memory.store")

# memory-YYYYMMDDTHHMMSSZ[-kind][-n].tar.gz: the archives backup and restore write (backup.py)
_ARCHIVE = re.compile(r"^memory-([0-9]{8}T[0-9]{6}Z)(?:-[a-z]+)?(?:-([0-9]+))?\.tar\.gz\Z")
# A note a journal line appended to notes.md, as memoryd writes the line (json.dumps)
_NOTE = re.compile(rb'\{"kind": "(?:noted|moved|dropped)", "text": ')
_FILES = ("memory.md", "user.md", "notes.md", "soul.md")


@dataclass
class Missing:
    """What of memory/ was missing before the start made anything."""

    folder: bool = False  # memory/ itself
    files: list[str] = field(default_factory=list)  # of _FILES
    journal: bool = False  # every month file of edits/, where edit ids were handed out

    def any(self) -> bool:
        return self.folder or bool(self.files) or self.journal

    def whole(self) -> bool:
        """memory/ gone, or everything it held: only a restore puts it back."""
        return self.folder or (self.journal and len(self.files) == len(_FILES))


def look(home: Home) -> Missing:
    """What is missing now, before anything is made (a name that exists as anything is there)."""
    if not os.path.lexists(home.memory):
        return Missing(folder=True, files=list(_FILES), journal=True)
    files = [name for name in _FILES if not os.path.lexists(home.memory_file(name))]
    try:
        months = [n for n in os.listdir(home.edits) if MONTH_FILE.match(n)]
    except FileNotFoundError:
        months = []
    except OSError:
        months = ["?"]  # there but unreadable: not missing, said by the journal's own readers
    # A journal with no month yet is a home with no edit yet, unless it handed out edit ids.
    return Missing(files=files, journal=not months and Issued(home).last("edit") is not None)


def newest_archive(home: Home) -> Path | None:
    """The newest archive in backups/ by the time its name holds (None: none, or unreadable)."""
    folder = layout.backups(home)
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    found = []
    for name in names:
        m = _ARCHIVE.match(name)
        if m is not None and os.path.isfile(folder / name) and not os.path.islink(folder / name):
            found.append((m.group(1), int(m.group(2) or 1), name))
    return folder / max(found)[2] if found else None


def journal_notes(home: Home) -> int | None:
    """How many notes the journal's lines appended to notes.md (None: it cannot be read). Read
    only when notes.md is found gone, a line at a time."""
    n = 0
    try:
        for name in sorted(os.listdir(home.edits)):
            if MONTH_FILE.match(name):
                with open(home.edits / name, "rb") as f:
                    n += sum(len(_NOTE.findall(line)) for line in f)
    except FileNotFoundError:
        return n
    except OSError:
        return None
    return n


def say(home: Home, missing: Missing, holds: str) -> None:
    """The one warning for memory files made anew where the home held memory."""
    archive = newest_archive(home)
    named = str(archive) if archive is not None else "ARCHIVE"
    where = (
        f"the newest backup ({archive})"
        if archive is not None
        else f"your newest backup (none is in {layout.backups(home)}: a copy you keep elsewhere)"
    )
    if missing.whole():
        gone = "memory/" if missing.folder else "every file of memory/"
        log.warning(
            "%s: %s missing (memory.md, user.md, notes.md, soul.md and the edit journal) in a "
            "home that holds memory (%s), so it was removed, not new; memoryd made them anew, "
            "empty, so that sessions start, but without that memory. %s holds it: bxctl memory "
            "restore --replace %s puts it back whole (runbook: restore-from-a-backup)",
            home.memory,
            gone,
            holds,
            where[0].upper() + where[1:],
            named,
        )
        return
    parts = []
    for name in missing.files:
        path = home.memory_file(name)
        if name == "notes.md":
            parts.append(_notes_part(home, path, where, named))
        elif name == "soul.md":
            parts.append(
                f"soul.md (the starter soul written in its place; yours: tar -xzf {named} "
                f"memory/soul.md, run in {home.root})"
            )
        elif missing.journal:
            parts.append(f"{name} (made anew, empty; {where} holds its entries)")
        else:
            parts.append(
                f"{name} (made anew, empty; any entries it held are journalled as a hand edit of "
                "it: bxctl memory log names it, bxctl memory undo ID puts them back)"
            )
    if missing.journal:
        parts.append(f"the edit journal {home.edits} (its lines: tar -xzOf {named} memory/edits)")
    log.warning(
        "%s: missing in a home that holds memory (%s), so removed, not new: %s (runbook: %s)",
        home.memory,
        holds,
        "; ".join(parts),
        "memory-unavailable" if missing.files else "journal-lost",
    )


def _notes_part(home: Home, path: Path, where: str, named: str) -> str:
    n = journal_notes(home)
    held = (
        "the journal cannot be read to count its notes"
        if n is None
        else f"the journal holds {counted(n, 'note')} it held"
    )
    journal = "bxctl memory log lists them, bxctl memory show ID prints each one's text"
    if named == "ARCHIVE":  # no archive in backups/
        back = f"{where} holds them: tar -xzOf ARCHIVE memory/notes.md; the journal's note lines"
    else:
        back = f"{where} holds them: tar -xzOf {named} memory/notes.md; notes journalled after it"
    return (
        f"notes.md (made anew, empty: {held}, which recall, search and export no longer find; "
        f"{back}: {journal}; put them in front of what {path} holds now)"
    )


def notes_there(home: Home, action: str, session: str | None) -> None:
    """Refuse a write that appends to notes.md while notes.md is missing (FileInvalid), logged
    at each refusal with the way back."""
    path = home.memory_file("notes.md")
    if os.path.lexists(path):
        return
    log.error(
        "%s: missing (deleted or moved since memoryd made it); %s by %s refused, so that a new "
        "notes.md does not hide the notes it held: put it back from your newest backup, "
        "tar -xzf ARCHIVE memory/notes.md, run in %s, or make it empty to go on without them "
        "(runbook: memory-unavailable)",
        path,
        action,
        session or "the owner",
        home.root,
    )
    raise FileInvalid(
        "refused: notes.md is missing (deleted or moved); nothing was saved, so that a new "
        "notes.md does not hide the notes it held; the owner must put it back "
        "(runbook: memory-unavailable)"
    )
