"""What this home has recorded of the texts an import brings, whatever the export says of them.

An export's provenance is the owner's file: its edit id may be blanked (the format allows null,
"the journal no longer holds it"), its session, class and untrusted flag rewritten. The edit-id
check (importclaim.py) only holds when the id is left as it was. So an item is also held to what
this home itself recorded of the same text: the label of every note of notes.md with that text
(an untrusted header keeps it untrusted), and of every journal line that wrote it (an untrusted or
secret write). No edit of the file can then make a text this home recorded as untrusted reach
memory.md, user.md or a trusted note.

Only the import's own texts are looked for (a digest each), so what is kept is bounded by the
file imported, never by the journal. The journal is read a chunk at a time, and only its lines
that can hold an untrusted or secret write are parsed (journallabels.RAISES); notes.md is read
once. Both are followed between an import's batches by reading what they gained (a file replaced
or shrunk is read again whole). Labels found only get stricter while an import runs.
"""

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from memoryd.data.journalled import NOTED, Label, line_label
from memoryd.home import MONTH_FILE, Home, open_read
from memoryd.index.journallabels import CHUNK, RAISES
from memoryd.journal.journal import IDENTITY_FILES, EditLine
from memoryd.journal.linefile import parse_line
from memoryd.journal.wholelines import WholeLines
from memoryd.memory import notes
from proto.trim import trim

# A record's kind is left out of the floor: it is the label (untrusted, class) that keeps a text
# out of identity, and a text written both as a clean note and as an entry is no stricter for it.
ANY = "entry"


@dataclass(frozen=True)
class Found:
    """The strictest record of one text: its label, and where it is recorded as said to the
    owner ("this home's journal records edit E of session S"; "as <label>" follows)."""

    label: Label
    said: str


@dataclass
class _Read:
    """How far a file was read: its device, inode and the bytes taken."""

    device: int = 0
    inode: int = 0
    offset: int = 0


@dataclass
class Floor:
    """The strictest label this home recorded for each of the import's texts (by digest)."""

    home: Home
    wanted: set[bytes]
    notes: dict[bytes, Found] = field(default_factory=dict)
    writes: dict[bytes, Found] = field(default_factory=dict)
    _read: dict[str, _Read] = field(default_factory=dict)

    @classmethod
    def of(cls, home: Home, texts: Iterable[str]) -> "Floor":
        floor = cls(home, {digest(t) for t in texts})
        floor.refresh()
        return floor

    def refresh(self) -> None:
        """Take what notes.md and the journal gained since the last look."""
        self._follow("notes.md", self.home.memory_file("notes.md"), self._take_notes)
        try:
            months = sorted(n for n in os.listdir(self.home.edits) if MONTH_FILE.match(n))
        except (FileNotFoundError, NotADirectoryError):
            months = []
        for name in months:
            self._follow(f"edits/{name}", self.home.edits / name, self._take_journal)

    def found(self, text: str) -> list[Found]:
        """The strictest note and the strictest journal write of text, as far as recorded."""
        key = digest(text)
        return [f for f in (self.notes.get(key), self.writes.get(key)) if f is not None]

    def _follow(self, name: str, path, take) -> None:
        read = self._read.get(name, _Read())
        try:
            with open_read(path) as f:
                st = os.fstat(f.fileno())
                same = (st.st_dev, st.st_ino) == (read.device, read.inode)
                start = read.offset if same and st.st_size >= read.offset else 0
                f.seek(start)
                done = take(f, st.st_size - start)
        except FileNotFoundError:
            return
        self._read[name] = _Read(st.st_dev, st.st_ino, start + done)

    def _take_notes(self, f, size: int) -> int:
        """Each note of what notes.md gained (a note is appended whole; a note still being
        written is read again, whole, at the next look)."""
        data = f.read(size)
        found = notes.parse(data)
        done = len(data)
        if found and not data.endswith(b"\n"):
            done = found[-1].start  # its last note is read again next time
            found = found[:-1]
        for note in found:
            key = digest(note.text)
            if key not in self.wanted:
                continue
            label = Label(ANY, note.klass, note.untrusted)
            said = f"this home's notes.md holds that text from session {note.session}"
            _keep(self.notes, key, Found(label, said))
        return done

    def _take_journal(self, f, size: int) -> int:
        lines = WholeLines(f, size, CHUNK)
        for data, cut in lines:
            at = 0
            while (m := RAISES.search(data, at, cut)) is not None:
                first = data.rfind(b"\n", 0, m.start()) + 1
                at = data.find(b"\n", m.end(), cut)
                at = cut if at == -1 else at
                record = parse_line(data[first:at], EditLine)
                if not isinstance(record, str):
                    self._take_line(record)
            del data
        return lines.done

    def _take_line(self, record: EditLine) -> None:
        """The texts record wrote that the import brings: an entry brought into memory.md or
        user.md, a noted note (a moved or dropped entry's label is its entry's write's)."""
        texts: list[tuple[str, str]] = []
        if record.to in IDENTITY_FILES and record.action != "undo":
            before = {trim(e) for e in record.before}
            texts += [("entry", trim(e)) for e in record.after if trim(e) not in before]
        texts += [(NOTED, trim(n.text)) for n in record.notes if n.kind == NOTED]
        for kind, text in texts:
            key = digest(text)
            if key not in self.wanted:
                continue
            session, label = line_label(record, kind)
            label = Label(ANY, label.klass, label.untrusted)
            by = f" of session {session}" if session else ""
            said = f"this home's journal records edit {record.id}{by}"
            _keep(self.writes, key, Found(label, said))


def digest(text: str) -> bytes:
    """text's key, trimmed as the parse and forget trim it (proto.trim), so that an entry held
    with U+001C..U+001F at an edge is found as the parse reads it; computed afresh at each
    import, never stored."""
    return hashlib.blake2b(trim(text).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _keep(kept: dict[bytes, Found], key: bytes, found: Found) -> None:
    """Keep the stricter record of a text (both, said together, when each is stricter in one
    part: one untrusted, the other secret)."""
    old = kept.get(key)
    if old is None or (old.label.laxer_than(found.label) and not found.label.laxer_than(old.label)):
        kept[key] = found
    elif old.label.laxer_than(found.label):
        kept[key] = Found(old.label.with_(found.label), f"{old.said}, and {found.said}")
