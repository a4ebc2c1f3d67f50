"""How forget takes the text out of the files memoryd writes, on the writer thread: the entries of
memory.md and user.md (the plan of an owner's edit), the notes of notes.md (the marker in place of
the text, headers kept), then the journal's months, the recall log, pending writes and the exports
in backups/ (scrub.py), each value judged by matching.py.

Apart from forget.py, which decides what is forgotten and in what order and says so to the owner;
this is the rewriting of each kind of file. Found is here because its journal months, rewritten up
to their end on a reader before the writer was taken (forget.prepare), are finished here.
"""

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import exportfiles, handkept, matching, notesswap, notestream, recalllog, scrub
from memoryd.data.places import recall_months
from memoryd.errors import AdminRefused
from memoryd.home import Home, open_read
from memoryd.journal.idform import PENDING_ID
from memoryd.memory import edits, shown


@dataclass
class Found:
    """What forget finds on a reader before it takes the writer: the index rows of each key it
    will list (finding them scans the index; deleting them by rowid does not), and each journal
    month that holds the text, rewritten up to its end then (scrub.prepare)."""

    stamp: str  # the marker's time
    rows: dict[str, list[int]] = field(default_factory=dict)
    months: dict[tuple[str, str], scrub.Prepared] = field(default_factory=dict)

    def drop(self) -> None:
        for prepared in self.months.values():
            prepared.drop()
        self.months = {}


def journal_change(text: str, marker: str):
    return lambda value: matching.journal_change(value, text, marker)


def query_change(text: str, marker: str):
    """A recall log line with text, as a query, replaced by the marker."""
    return lambda value: matching.query_change(value, text, marker)


def pending_change(text: str):
    """A pending write that holds text is dropped whole."""
    return lambda value: None if matching.pending_holds(value, text) else value


def pending_taken(review, texts: list[str]) -> list[str]:
    """The ids of the staged writes still waiting whose lines pending_change drops for texts. The
    forget's journal line names them, written before the lines leave pending.jsonl, so that review
    counts them resolved by the owner's forget, never as lines lost to damage or a hand edit
    (journal/forgotpending.py), and a crash between the two leaves none said lost."""
    return review.holding(lambda line: any(matching.pending_holds(line, t) for t in texts))


def pending_in(path: Path, texts: Iterable[str], resolved: set[str]) -> list[str]:
    """pending_taken for a pending.jsonl no memoryd serves (a restore's staged copy): the ids of
    its lines pending_change drops for texts, those resolved aside."""
    texts = list(texts)
    found: list[str] = []
    try:
        f = open_read(path)
    except FileNotFoundError:
        return found
    with f:
        for raw in f:
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            named = value.get("id") if isinstance(value, dict) else None
            if not (isinstance(named, str) and PENDING_ID.match(named)):
                continue
            if named in resolved or named in found:
                continue
            if any(matching.pending_holds(value, t) for t in texts):
                found.append(named)
    return found


def without(texts: list[str], file: str, marker: str):
    """The plan removing texts from file; its journal line's before holds the marker in their
    place, so the line never carries the text."""

    def decide(current: list[str]) -> edits.Plan:
        def held(entry: str) -> bool:
            return any(matching.same(entry, text) for text in texts)

        after = tuple(e for e in current if not held(e))
        before = tuple(marker if held(e) else e for e in current)
        return edits.Plan("forget", file, before, after)

    return decide


def check_notes(home: Home, numbers: list[int], texts: list[str]) -> None:
    """NotesMoved, nothing written, unless notes.md still holds texts under numbers exactly: what
    mark_notes checks, made before any other file of the forget is written."""
    with open_read(home.memory_file("notes.md")) as f:
        for _ in _marked(f, numbers, texts, "", []):
            pass


def mark_notes(
    home: Home, numbers: list[int], texts: list[str], marker: str
) -> list[tuple[int, int]]:
    """notes.md with the text of each numbered note replaced by the marker, headers kept; the
    (old end, change of length) of each note marked. The numbers were found in an earlier read,
    and the owner may save notes.md meanwhile: a number is marked only if the note under it in
    this read, the one rewritten, still holds one of texts, and only while the notes holding them
    are those numbers; else nothing is written and the forget is refused (NotesMoved).
    notes.md has no limit (spec 3): it is read a note at a time (notestream.py) and written as it
    is read into a temporary file, never held whole, which replaces notes.md only while notes.md
    is still the file read (notesswap.py): a save of the owner's (or an append) made meanwhile
    stays as the owner left it, and the forget is refused the same way, for the owner to run
    again."""
    path = home.memory_file("notes.md")
    shifts: list[tuple[int, int]] = []
    with open_read(path) as f:
        read = notesswap.opened(f)
        if notesswap.replace_read(path, read, _marked(f, numbers, texts, marker, shifts)) is None:
            raise NotesMoved(MOVED)
    return shifts


def _marked(
    f, numbers: list[int], texts: list[str], marker: str, shifts: list[tuple[int, int]]
) -> Iterator[bytes]:
    """notes.md (the open file f) as mark_notes writes it, a note at a time, its shifts added to
    shifts; NotesMoved once the whole file is read, when the notes moved (the temporary file the
    bytes went to is then removed, and notes.md is left as it was)."""
    wanted = set(numbers)
    holding: list[int] = []
    for start, data, found in notestream.blocks(notestream.file_chunks(f)):
        out = data
        for note in found:
            if any(matching.same(note.text, t) for t in texts):
                holding.append(note.number)
            if note.number not in wanted:
                continue
            header_end = notestream.header_end(data, note.start - start)
            body = marker.encode() + b"\n"
            out = data[:header_end] + body
            shifts.append((note.end, len(body) - (note.end - start - header_end)))
        yield out
    if sorted(holding) != sorted(set(numbers)):
        raise NotesMoved(MOVED)


NOTES_CHANGED = "notes.md changed while forget ran"
MOVED = (
    f"refused: {NOTES_CHANGED}, so its note numbers moved; nothing was forgotten: run bxctl "
    "memory search again and forget the note by the id it prints now"
)


class NotesMoved(AdminRefused):
    """notes.md no longer holds the text under the numbers found, or was saved while forget
    rewrote it: refused, notes.md as the owner left it."""


def scrub_everywhere(service, journal, text: str, marker: str, found: Found) -> None:
    home: Home = service.store.home
    change = journal_change(text, marker)
    for path in journal.month_files():
        prepared = found.months.pop((str(path), text), None)
        if prepared is not None:
            scrub.finish(prepared, text, change, scrub.journal_dumps)
        else:
            scrub.rewrite(path, text, change, scrub.journal_dumps)
    with recalllog.held(service):
        for path in recall_months(home):
            scrub.rewrite(path, text, query_change(text, marker), scrub.compact_dumps)
    pending = home.memory_file("pending.jsonl")
    scrub.rewrite(pending, text, pending_change(text), scrub.journal_dumps)
    exportfiles.scrub_exports(home, text, marker)
    handkept.scrub(home, text, marker)
    shown.scrub(service.index, text, marker)
