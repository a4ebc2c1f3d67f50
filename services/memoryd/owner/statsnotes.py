"""notes.md as `bxctl memory stats` reads it: a note at a time (data/notestream.py), never whole.

notes.md has no limit (spec 3; one import adds up to 64 MiB), and stats needs of its notes only
what tells a recall's hit which note it named (owner/notehits.NoteIds: a few bytes a note), the
moved notes it lists, the numbers of the notes that hold an entry of memory.md or user.md (their
hits count for the entry), and the lines saying what is wrong with the file: its first line not
in UTF-8, text before the first header, each damaged header, in the words they have when the
whole file is read (memory/notes.py).
"""

from dataclasses import dataclass, field

from memoryd.data import notestream
from memoryd.home import Home, open_read
from memoryd.journal import forgottenmarker
from memoryd.memory import notes
from memoryd.owner.notehits import NoteIds


@dataclass
class NotesRead:
    ids: NoteIds | None  # None when notes.md could not be read: its hits name no note
    moved: list[notes.NoteEntry] = field(default_factory=list)
    holding: dict[int, str] = field(default_factory=dict)  # note number: the entry it holds
    unread: list[str] = field(default_factory=list)


def read(home: Home, entry_texts: set[str], why) -> NotesRead:
    """notes.md's notes as stats counts them; entry_texts: the entries of memory.md and user.md;
    why: the words for an OSError (recallcounts.why)."""
    try:
        with open_read(home.memory_file("notes.md")) as f:
            return _read(f, entry_texts)
    except FileNotFoundError:
        return NotesRead(NoteIds([]))
    except OSError as e:
        return NotesRead(None, unread=[f"memory/notes.md: {why(e)}; its notes not shown"])


def _read(f, entry_texts: set[str]) -> NotesRead:
    ids = NoteIds([])
    got = NotesRead(ids)
    encoding = leading = None
    damage: list[str] = []
    lines = 0  # newlines before the piece at hand
    for start, data, found in notestream.blocks(notestream.file_chunks(f)):
        if encoding is None:
            encoding = notes.not_utf8(data, lines)
        if start == 0:
            leading = notes.leading_said(data)
        for note in found:
            ids.add(note)
            # A forgotten note keeps only the forget's marker, which is no memory (export and
            # promote leave it out): it is neither a moved note nor one holding an entry.
            if note.kind == "moved" and not forgottenmarker.is_marker(note.text):
                got.moved.append(note)
            if note.text in entry_texts and not forgottenmarker.is_marker(note.text):
                got.holding[note.number] = note.text
            if note.damaged:
                damage.append(notestream.damage_said(note, data, start, lines))
        lines += data.count(b"\n")
    got.unread = [said for said in (encoding, leading) if said is not None] + damage
    return got
