"""A temporary file a kill left beside memory.md or user.md: removed when memoryd's own, kept as
FILE.hand-edit-<time> when it may hold a save of the owner's.

memoryd's write of memory.md or user.md is an exchange (memfiles.replace_unchanged): a save of the
owner's that lands just before it is moved under memoryd's temporary name until it is exchanged
back, so a leftover is removed only when it holds what some other place already holds (handedit.py
says which); anything else is the owner's, kept and logged for the owner to merge.

Why a module of its own: handedit.py journals what the files hold; this looks only at what a
crash left beside them, when the start removes its temporary files.
"""

import contextlib
import datetime as dt
import logging
import os
from pathlib import Path

from memoryd.errors import FileDamaged
from memoryd.home import Home, open_file
from memoryd.journal import scan
from memoryd.journal.journal import IDENTITY_FILES, Journal
from memoryd.memory import entries
from memoryd.memory.memfiles import read_entries
from memoryd.memory.writeintent import intended_edit, read_intent
from proto.files import read_at_most

# handedit.py's logger: these lines are the hand edits' own, and keep its name.
log = logging.getLogger("memoryd.memory.handedit")


def keep_if_owners(home: Home, path: Path) -> Path | None:
    """A temporary file left beside memory.md or user.md by a crash, kept as
    FILE.hand-edit-<time> (logged) when it may hold a save of the owner's that no other place
    holds; the name it is kept under, or None when it is memoryd's own and may be removed."""
    file = next((f for f in IDENTITY_FILES if path.name.startswith(f".{f}.")), None)
    if file is None or not _owners(home, path, file):
        return None
    stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}"
    kept = home.memory_file(f"{file}.hand-edit-{stamp}")
    n = 1
    while os.path.lexists(kept):
        n += 1
        kept = home.memory_file(f"{file}.hand-edit-{stamp}-{n}")
    os.rename(path, kept)
    log.warning(
        "%s: a save left under memoryd's temporary name %s by a crash while memoryd wrote %s "
        "is not what %s or the journal holds; kept here for the owner to merge",
        kept,
        path.name,
        file,
        file,
    )
    return kept


def _owners(home: Home, path: Path, file: str) -> bool:
    """Whether the leftover at path holds what neither file now, nor memoryd's intended write
    (its after, whole or a start of it, or its before), nor the journal's latest edits of file
    (their afters and befores) hold."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except OSError:
        return False  # nothing that can be read there to keep; its removal says what fails
    try:
        data = read_at_most(fd, entries.MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > entries.MAX_BYTES:
        return True  # not memoryd's: it never writes so much
    edit = intended_edit(read_intent(home))
    if edit is not None and edit.to == file and entries.file_bytes(edit.after).startswith(data):
        return False  # memoryd's own new file, whole or torn by the kill
    try:
        held = entries.parse(entries.decode(data, file))
    except FileDamaged:
        return True
    # What memoryd's own exchange moves out is the file's text before its write: the intent's
    # before, or, once the write is journalled, the before of one of the journal's latest edits
    # of the file (a kill between the journal line and the drop of that copy leaves it).
    known = [] if edit is None or edit.to != file else [edit.after, edit.before]
    with contextlib.suppress(FileDamaged):
        known.append(read_entries(home, file))
    known.extend(_journal_texts(home, file))
    return held not in known


# How many of the journal's latest edits of a file hold the texts a leftover is compared with.
LATEST_EDITS = 3


def _journal_texts(home: Home, file: str) -> list[list[str]]:
    """The afters and befores of the journal's latest edits of file (the last after first);
    the empty file alone when the journal holds none (or cannot be read)."""
    texts: list[list[str]] = []
    try:
        with contextlib.closing(scan.lines_to(Journal(home).month_files(), file)) as lines:
            for _, _, record in lines:
                texts += [list(record.after), list(record.before)]
                if len(texts) >= 2 * LATEST_EDITS:
                    break
    except OSError:
        pass
    return texts or [[]]
