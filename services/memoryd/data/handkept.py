"""The owner's saves memoryd kept beside memory.md, user.md and notes.md (FILE.hand-edit-<time>),
in forget's reach.

A save that landed while memoryd swapped its own write in, or one a kill left under memoryd's
temporary name, is kept as memory.md.hand-edit-<time> for the owner to merge (memory/memfiles.py,
memory/handedit.py, data/notesswap.py): memoryd wrote it there, so a forget takes the text out of
it as out of the file itself. From a save of memory.md or user.md each entry that is the text
exactly goes (the file is rewritten whole, and removed when nothing is left); in a save of
notes.md each note that is the text keeps its header and gets forget's marker, as in notes.md
(data/erasing.py), the file read and rewritten a note at a time (it has no limit, like notes.md).
A file that cannot be read or parsed is left as it is, logged.
"""

import logging
import re
from collections.abc import Iterator
from pathlib import Path

from memoryd.data import matching, notestream
from memoryd.errors import FileDamaged
from memoryd.home import Home, atomic_write, open_read
from memoryd.memory import entries
from memoryd.memory.memfiles import read_text
from proto.plural import counted

log = logging.getLogger(__name__)

KEPT = re.compile(r"\A(?:memory|user|notes)\.md\.hand-edit-[0-9A-Za-z-]+\Z")
NOTES = "notes.md."


def kept_files(home: Home) -> list[Path]:
    try:
        return sorted(p for p in home.memory.iterdir() if KEPT.match(p.name) and p.is_file())
    except OSError:
        return []


def _entries(path: Path) -> list[str] | None:
    try:
        return entries.parse(read_text(path, path.name))
    except FileDamaged as e:
        log.warning("%s: not searched for the text forgotten: %s", path, e)
        return None


def _notes_holding(path: Path, texts: list[str]) -> int | None:
    """How many notes of a kept save of notes.md are one of texts; None when it cannot be read."""
    try:
        with open_read(path) as f:
            found = notestream.entries(notestream.file_chunks(f))
            return sum(any(matching.same(n.text, t) for t in texts) for n in found)
    except OSError as e:
        log.warning("%s: not searched for the text forgotten: %s", path, e)
        return None


def _holds(path: Path, texts: list[str]) -> bool:
    if path.name.startswith(NOTES):
        return bool(_notes_holding(path, texts))
    held = _entries(path) or []
    return any(matching.same(e, t) for e in held for t in texts)


def holding(home: Home, texts: list[str]) -> int:
    """How many kept saves hold one of texts as an entry or a note."""
    return sum(_holds(path, texts) for path in kept_files(home))


def scrub(home: Home, text: str, marker: str) -> None:
    """text taken out of every kept save that holds it; marker (forget's own, as in notes.md)
    stands in a note's place."""
    for path in kept_files(home):
        if path.name.startswith(NOTES):
            _scrub_notes(path, text, marker)
        else:
            _scrub_entries(path, text)


def _scrub_entries(path: Path, text: str) -> None:
    held = _entries(path)
    if held is None or not any(matching.same(e, text) for e in held):
        return
    left = [e for e in held if not matching.same(e, text)]
    if left:
        atomic_write(path, entries.file_bytes(left))
    else:
        path.unlink()
    log.info(
        "%s: the forgotten text taken out (%s left)",
        path,
        counted(len(left), "entry", "entries"),
    )


def _scrub_notes(path: Path, text: str, marker: str) -> None:
    """Each note of the save that is text marked, the file rewritten whole (atomically)."""
    held = _notes_holding(path, [text])
    if not held:
        return
    with open_read(path) as f:
        atomic_write(path, _marked(notestream.file_chunks(f), text, marker))
    log.info("%s: the forgotten text taken out (%s marked forgotten)", path, counted(held, "note"))


def _marked(chunks, text: str, marker: str) -> Iterator[bytes]:
    """The save's bytes a note at a time, each note that is text cut after its header line and
    followed by marker (every piece of notestream.blocks holds at most one note, last)."""
    for start, data, found in notestream.blocks(chunks):
        note = found[-1] if found else None
        if note is None or not matching.same(note.text, text):
            yield data
            continue
        yield data[: notestream.header_end(data, note.start - start)] + marker.encode() + b"\n"
