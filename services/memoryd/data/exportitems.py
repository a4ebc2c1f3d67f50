"""An export's items: the entries of memory.md and user.md and the notes of notes.md as the
files held give them, each with its provenance (exchange.py's docstring says which).

Moved out of exchange.py, which writes the export, for its size: what is read here is what
grows with the home. memory.md and user.md are small (memoryd refuses one far over anything it
writes, entries.TooLarge), but notes.md has no limit (spec 3) and the journal is never trimmed,
so both are read a chunk at a time, never whole, and of them only what the export's items need
is kept: of the journal, the provenance of the entries and notes there are; of notes.md, a key
for each note (16 bytes) while the journal is passed over, then one note at a time as the items
are given (notestream.py).

A note with no text (a header written by hand with nothing under it yet) is no memory: it is left
out, as a forget's marker is, and logged, so that every export imports (import skips one that an
older export holds).

While a forget that stopped part way stands (unfinished.py), the texts it takes are left out
(Leaving), as recall leaves them out: the files may still hold them, and an export is what the
owner carries to another home, where no re-run of the forget reaches.
"""

import datetime as dt
import hashlib
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from memoryd.data import notestream, snapshot
from memoryd.errors import FileDamaged
from memoryd.journal import forgottenmarker
from memoryd.journal.journal import IDENTITY_FILES, EditLine, class_source
from memoryd.journal.linefile import parse_line
from memoryd.memory import entries, notes
from memoryd.trust.classrule import entry_class
from proto.trim import trim

log = logging.getLogger(__name__)

# A provenance time: UTC to the minute (a note's header) or the second (a journal line).
TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2})?Z")


def parse_time(text: str) -> dt.datetime:
    """A provenance time as a datetime in UTC; ValueError unless it is one, and a real time."""
    if not TIME.fullmatch(text):
        raise ValueError(text)
    fmt = "%Y-%m-%dT%H:%M:%SZ" if len(text) == 20 else "%Y-%m-%dT%H:%MZ"
    return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC)


@dataclass
class Leaving:
    """The texts an export leaves out (a stopped forget's, unfinished.py), compared as forget
    compares them (matching.same: surrounding white space aside), and what it left out of
    them: how many entries, and which notes by number (notes.md is read twice, so a note is
    counted once)."""

    texts: frozenset[str] = frozenset()
    entries: int = 0
    notes: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, texts: Iterable[str]) -> "Leaving":
        return cls(frozenset(trim(text) for text in texts))

    def takes(self, text: str) -> bool:
        return bool(self.texts) and trim(text) in self.texts

    def kept(self, found: list[str]) -> list[str]:
        """The entries of found it does not take, those it does counted."""
        kept = [text for text in found if not self.takes(text)]
        self.entries += len(found) - len(kept)
        return kept


def _taken(text: object) -> str | None:
    """text when import would take it as a time, else None."""
    if not isinstance(text, str):
        return None
    try:
        parse_time(text)
    except ValueError:
        return None
    return text


def _provenance(line: EditLine, file: str) -> dict:
    imported = getattr(line, "imported", None)
    if isinstance(imported, dict):
        # The edit is this home's import: the id the item came with names an edit of the home
        # it was exported from, and here the same id is another edit (both count from 0001 each
        # day). The session, time and label stay those it came with: its trust rests on them.
        return {**imported, "file": file, "edit": line.id, "time": _taken(imported.get("time"))}
    return {
        "file": file,
        "session": line.session,
        "edit": line.id,
        "time": _taken(line.time),
        # An entry's class as the block finds it (a rewrite's carried class among it; one that
        # is no class, as a hand edit of an unknown class gives, the highest, as the block
        # takes it), always one the export format names, so that an import takes the file.
        "class": entry_class(class_source(line) if file in IDENTITY_FILES else line.taint),
        "untrusted": bool(line.untrusted),
    }


def _find(snap: snapshot.Snapshot, name: str) -> snapshot.Held | None:
    return next((held for held in snap.files if held.name == name), None)


def read_entries(snap: snapshot.Snapshot, name: str) -> list[str]:
    """The entries of memory.md or user.md as the snapshot holds them; one far over anything
    memoryd writes is refused by its size, never read whole (entries.TooLarge)."""
    held = _find(snap, f"memory/{name}")
    if held is None:
        raise FileDamaged(f"{name} is missing")
    if held.size > entries.MAX_BYTES:
        raise entries.TooLarge(name, held.size)
    return entries.parse(entries.decode(b"".join(held.chunks()), name))


def _notes(
    snap: snapshot.Snapshot, leaving: Leaving, empty: list[int] | None = None
) -> Iterator[notes.NoteEntry]:
    """The notes of notes.md as held, one at a time, but for the markers standing where the
    owner forgot a note (brought in elsewhere, one would be recalled as a note, with the
    forgotten note's provenance), the notes with no text (their numbers put in empty) and the
    notes leaving takes. notes.md has no limit (spec 3), so
    it is read as a stream (notestream.py), never whole, and its size is never refused."""
    held = _find(snap, "memory/notes.md")
    if held is None:
        return
    for note in notestream.entries(held.chunks()):
        if forgottenmarker.is_marker(note.text):
            continue
        if not trim(note.text):
            if empty is not None:
                empty.append(note.number)
            continue
        if leaving.takes(note.text):
            leaving.notes.add(note.number)
            continue
        yield note


def _key(kind: str, text: str) -> bytes:
    """A note's kind and text in 16 bytes: what the pass over the journal keeps a note by."""
    return hashlib.blake2b(
        f"{kind}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


def _journal(snap: snapshot.Snapshot) -> Iterator[EditLine]:
    """Every journal line the snapshot holds, oldest first, one at a time: a month is read a
    chunk at a time, never whole (the journal is never trimmed, so it is the one file that grows
    with the home's age; held whole, with every line parsed, a long one took more than memoryd's
    memory limit). A damaged line is skipped and logged."""
    for held in snap.files:
        if not held.name.startswith("memory/edits/"):
            continue
        for number, raw in enumerate(_lines(held), start=1):
            if not raw.strip():
                continue
            line = parse_line(raw, EditLine)
            if isinstance(line, str):
                log.warning("%s: line %d %s; skipped", held.name, number, line)
            else:
                yield line


def _lines(held: snapshot.Held) -> Iterator[bytes]:
    """The lines of a held file (without their newlines), read a chunk at a time; a line torn by
    a chunk's end is carried into the next."""
    pending: list[bytes] = []
    for chunk in held.chunks():
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending.append(chunk)  # a line longer than a chunk: held until its newline
            continue
        whole = chunk[:cut]
        if pending:
            whole = b"".join([*pending, whole])
        pending = [chunk[cut:]] if cut < len(chunk) else []
        yield from whole.split(b"\n")[:-1]
        del whole
    if pending:
        yield b"".join(pending)


def items(snap: snapshot.Snapshot, leaving: Leaving | None = None) -> Iterator[dict]:
    """The export's items from the files held, entries first (memory.md, user.md), then notes
    in file order. The files are read first, so that the pass over the journal keeps the
    provenance of what they hold only: what it keeps is bounded by the entries and notes there
    are, not by the edits made, and of a note only its key and the provenance it gets. All but
    the notes is read here, a file refused before anything is written; the items are given one
    at a time as notes.md is read again, so no more than one note is held whole. What leaving
    takes is left out, and counted in it."""
    leaving = leaving or Leaving()
    current = {file: leaving.kept(read_entries(snap, file)) for file in IDENTITY_FILES}
    counts: dict[bytes, int] = {}  # how many notes there are of each key
    empty: list[int] = []
    for note in _notes(snap, leaving, empty):
        key = _key(note.kind, note.text)
        counts[key] = counts.get(key, 0) + 1
    if empty:
        shown = ", ".join(f"note:{n}" for n in empty[:10]) + (", ..." if len(empty) > 10 else "")
        log.info(
            "memory/notes.md: %s with no text left out of the export (%s)",
            "a note" if len(empty) == 1 else f"{len(empty):,} notes",
            shown,
        )
    added, appended = _provenances(snap, current, counts)
    return _items(snap, current, added, appended, leaving)


def _provenances(
    snap: snapshot.Snapshot, current: dict[str, list[str]], counts: dict[bytes, int]
) -> tuple[dict[tuple[str, str], dict], dict[bytes, list[dict]]]:
    """One pass over the journal: the provenance of each entry (the last edit that added it),
    and of each note key the edits that appended a note of it, the first as many as there are
    such notes (a note takes the first left, in file order)."""
    wanted = {(file, text) for file, texts in current.items() for text in texts}
    added: dict[tuple[str, str], dict] = {}
    appended: dict[bytes, list[dict]] = {}
    for line in _journal(snap):
        imported = getattr(line, "imported", None)
        said = imported.get("time") if isinstance(imported, dict) else line.time
        if said is not None and _taken(said) is None:
            shown = str(said)[:40]
            log.warning(
                "export: edit %s gives the time %r, which is no time; left out", line.id, shown
            )
        if line.to in IDENTITY_FILES:
            before = set(line.before)
            for entry in line.after:
                if entry not in before and (line.to, entry) in wanted:
                    added[(line.to, entry)] = _provenance(line, line.to)
        for written in line.notes:
            key = _key(written.kind, written.text)
            found = appended.setdefault(key, []) if key in counts else None
            if found is not None and len(found) < counts[key]:
                prov = _provenance(line, "notes.md")
                found.append({k: prov[k] for k in ("session", "edit", "time") if k in prov})
    return added, appended


def _items(
    snap: snapshot.Snapshot,
    current: dict[str, list[str]],
    added: dict[tuple[str, str], dict],
    appended: dict[bytes, list[dict]],
    leaving: Leaving,
) -> Iterator[dict]:
    for file in IDENTITY_FILES:
        for text in current[file]:
            prov = added.get((file, text)) or {
                "file": file,
                "session": None,
                "edit": None,
                "time": None,
                "class": "private",
                "untrusted": False,
            }
            yield {"kind": "entry", "file": file, "text": text, "provenance": prov}
    for note in _notes(snap, leaving):
        found = appended.get(_key(note.kind, note.text)) or []
        edit = found.pop(0) if found else {}
        prov = {
            "file": "notes.md",
            "session": edit.get("session", note.session),
            "edit": edit.get("edit"),
            "time": edit.get("time") or note.time,
            "class": note.klass,
            "untrusted": note.untrusted,
        }
        yield {
            "kind": "note",
            "note": note.kind,
            "number": note.number,
            "source": note.source,
            "text": note.text,
            "provenance": prov,
        }
