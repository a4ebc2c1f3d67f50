"""Where forget finds the text it forgets, counted for the owner before and after.

Every place is judged by one rule (matching.py): a value that carries what was written is the
text exactly. The places: entries of memory.md and user.md, notes of notes.md, journal lines,
recall log lines, pending writes, the exports memoryd left in backups/, the owner's saves kept
beside the memory files (handkept.py), and the index rows of other records that hold it
(carriers.py), such as the session record of the memory call that wrote an entry.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from memoryd.data import carriers, exportfiles, handkept, matching, notestream, scrub
from memoryd.home import Home, open_read
from memoryd.journal.journal import IDENTITY_FILES
from memoryd.memory import notes
from memoryd.memory.memfiles import read_entries
from proto.plural import counted
from proto.trim import trim


@dataclass
class Places:
    entries: dict[str, int] = field(default_factory=dict)  # file -> entries holding the text
    notes: list[int] = field(default_factory=list)  # note numbers holding it
    journal: int = 0  # lines
    recalls: int = 0  # lines
    pending: int = 0  # lines
    exports: int = 0  # files in backups/
    kept: int = 0  # saves of the owner's kept beside memory.md, user.md, notes.md (handkept.py)
    records: dict[str, list[int]] = field(default_factory=dict)  # other keys -> their rows
    rows: dict[str, list[int]] = field(default_factory=dict)  # every key found -> its rows

    def anything(self) -> bool:
        return bool(
            self.entries
            or self.notes
            or self.journal
            or self.recalls
            or self.pending
            or self.exports
            or self.kept
            or self.records
        )

    def said(self) -> str:
        parts = [f"{n} entr{'y' if n == 1 else 'ies'} of {f}" for f, n in self.entries.items()]
        if self.notes:
            parts.append(f"{counted(len(self.notes), 'note')} of notes.md")
        parts.append(counted(self.journal, "journal line"))
        parts.append(counted(self.recalls, "recall log line"))
        if self.pending:
            parts.append(counted(self.pending, "pending write"))
        if self.exports:
            parts.append(f"{counted(self.exports, 'export')} in backups/")
        if self.kept:
            parts.append(counted(self.kept, "kept hand edit"))
        return ", ".join(parts)

    def index_said(self) -> str:
        """The other session records whose index rows go too, when there are any."""
        sessions = [key for key in self.records if key.startswith("session:")]
        if not sessions:
            return ""
        return f" (with the rows of {counted(len(sessions), 'more session record')} that held it)"


def notes_of(home: Home) -> Iterator[notes.NoteEntry]:
    """notes.md's notes one at a time (notestream.py): it has no limit (spec 3), and forget
    looks at each note once, so it is never held whole; none when it is missing."""
    try:
        f = open_read(home.memory_file("notes.md"))
    except FileNotFoundError:
        return
    with f:
        yield from notestream.entries(notestream.file_chunks(f))


def recall_months(home: Home):
    try:
        return sorted(p for p in home.recalls.iterdir() if p.name.endswith(".jsonl"))
    except FileNotFoundError:
        return []


# How the index rows holding texts are found: find(index, texts) -> key -> rowids.
Find = Callable[[Any, list[str]], dict[str, list[int]]]


def places(
    home: Home, journal, texts: list[str], keys: list[str], index, find: Find | None = None
) -> Places:
    """Where texts are held; keys: what the target names itself (not counted again); find: how
    the index rows holding them are found (a forget's writer job takes those its prepare found:
    carrierseen.py), carriers.find by default."""
    found = Places()
    for file in IDENTITY_FILES:
        n = sum(1 for e in read_entries(home, file) if any(matching.same(e, t) for t in texts))
        if n:
            found.entries[file] = n
    found.notes = [n.number for n in notes_of(home) if any(matching.same(n.text, t) for t in texts)]
    for text in texts:
        if not trim(text):
            continue
        found.journal += sum(
            scrub.count(p, text, matching.journal_holds) for p in journal.month_files()
        )
        found.recalls += sum(
            scrub.count(p, text, matching.query_holds) for p in recall_months(home)
        )
        found.pending += scrub.count(
            home.memory_file("pending.jsonl"), text, matching.pending_holds
        )
        found.exports += exportfiles.holding(home, text)
    found.kept = handkept.holding(home, texts)
    own = set(keys) | {f"note:{n}" for n in found.notes}
    if index is not None:
        found.rows = (find or carriers.find)(index, texts)
        found.records = {k: v for k, v in found.rows.items() if k not in own}
    return found
