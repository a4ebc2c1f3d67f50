"""A restore's notes.md headers checked against the archive's own journal before anything is laid.

An archive is the owner's file: a notes.md header edited by hand (the manifest's hash mended to
match) could say trusted of a note whose write the archive's journal records as untrusted, and
recall and the prompt would follow the header. Each note of the staged notes.md is paired with the
journal line that appended it (its text, and its session first: the k-th note of a text and
session with the k-th such write, then what is left by text alone), and a header laxer than that
line (trusted where the line says untrusted, a lower class, moved or dropped where the line noted
it) is made as strict in the copy laid: the label memoryd gave when it wrote the note. The restore
goes on, since refusing would leave the owner to mend a tar by hand, and its answer names each
note so changed, the edit and what to do to keep the text in memory (promote it: the owner's
own journalled act, never a label claimed by a file). A note no journal line wrote (the archive's
journal lacks it) is laid as its header says, as before.

A header memoryd does not write (edited by hand: a date no clock gives, a word changed) is laid as
it stands and read as every reader reads it, an untrusted note (memory/notes.py); the answer names
it, as it names text before the first header, which belongs to no note. The rest of the archive is
laid: the damage is that note's alone, read the strictest way, and refusing the whole backup for
it would leave the owner no way back but mending a tar by hand.
"""

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import notestream
from memoryd.data.journalled import NOTED, Label, Written, because, klass_of, line_label
from memoryd.home import Home, atomic_write, open_read
from memoryd.journal import forgottenmarker
from memoryd.journal.byfile import FileState
from memoryd.journal.journal import IDENTITY_FILES, EditLine, Journal
from memoryd.journal.linefile import parse_line
from memoryd.journal.mapfile import mapped
from memoryd.memory import edits, notes
from proto.trim import trim

SAID_MAX = 5  # notes named in the answer; the rest counted

# Only the lines that append notes or bring entries into identity are parsed: a hand-kept
# journal of many months is read once, line by line, never parsed whole.
WANTED = (b'"notes": [{', b'"to": "memory.md"', b'"to": "user.md"')


@dataclass
class Strict:
    """The notes whose headers a restore made strict: (number, text, why) of each."""

    made: list[tuple[int, str, str]]
    damaged: tuple[str, ...] = ()  # what notes.md holds that is no note memoryd writes

    def said(self) -> str:
        """The answer's sentence; "" when every header held."""
        damaged = "; ".join([*self.damaged[:SAID_MAX], *_more(len(self.damaged))])
        if not self.made:
            return damaged
        parts = [
            f"note {number} ({edits.shorten(text)!r}) laid with its journal's label: its header "
            f"{why}"
            for number, text, why in self.made[:SAID_MAX]
        ]
        if len(self.made) > SAID_MAX:
            parts.append(f"and {len(self.made) - SAID_MAX} more")
        strict = (
            "; ".join(parts) + "; the archive's notes.md headers were laxer than its journal, "
            "which memoryd follows: to keep such a note in memory, read it and promote it "
            "yourself (bxctl memory promote note:N --file memory)"
        )
        return f"{strict}; {damaged}" if damaged else strict


def _more(count: int) -> list[str]:
    return [f"and {count - SAID_MAX} more"] if count > SAID_MAX else []


def _lines(months: list[Path]):
    for path in months:
        with mapped(path) as data:
            start = 0
            while start < len(data):
                end = data.find(b"\n", start)
                end = len(data) if end == -1 else end
                if any(data.find(w, start, end) != -1 for w in WANTED):
                    record = parse_line(bytes(data[start:end]), EditLine)
                    if not isinstance(record, str):
                        yield record
                start = end + 1


Write = tuple[str | None, Written | None]  # the session that appended a note, and its record


def _writes(months: list[Path]) -> dict[str, list[Write]]:
    """Every note the journal records appending, by text, in order; no record for a moved or
    dropped entry whose class no earlier line gives (nothing to check its header against)."""
    files = {f: FileState() for f in IDENTITY_FILES}  # the class each entry came in with
    out: dict[str, list[Write]] = defaultdict(list)
    for record in _lines(months):
        for note in record.notes:
            text = trim(note.text)
            if note.kind == NOTED:
                session, label = line_label(record, NOTED)
                out[text].append((session, Written(record.id, session, label)))
            elif note.kind in ("moved", "dropped"):
                file = record.to if record.to in IDENTITY_FILES else record.file
                klass = _came_with(files[file], text) if file in IDENTITY_FILES else None
                if klass is None:  # no earlier line brought it in: nothing to check against
                    out[text].append((record.session, None))
                else:
                    label = Label(note.kind, klass, False)
                    out[text].append((record.session, Written(record.id, record.session, label)))
        if record.to in IDENTITY_FILES:
            files[record.to].take("", 0, record)
    return out


def _came_with(state: FileState, text: str) -> str | None:
    """The class the entry holding text came into its file with, as the journal index keeps it
    (FileState.take: an undo brings nothing in, an entry that left the file is forgotten); None
    when no line brought it in."""
    for entry, source in state.came_with.items():
        if trim(entry) == text:
            return klass_of(source)
    return None


class _Pairing:
    """Each note's write: by text and session first (pass 1, in order), then by text alone
    (pass 2, in order: a header whose session was edited too is still paired with the write of
    its text left over). A note's write is known once its pass 2 turn is over, so the passes
    read notes.md a note at a time (it has no limit), never holding its notes."""

    def __init__(self, writes: dict[str, list[Write]]) -> None:
        self.writes = writes
        self.taken: set[int] = set()
        self.out: dict[int, Written] = {}

    def pair(self, note: notes.NoteEntry, by_session: bool) -> Written | None:
        """note's turn in a pass; its write, when it has one by now."""
        if note.number not in self.taken:
            pool = self.writes.get(note.text, [])
            for at, (session, written) in enumerate(pool):
                if by_session and session != note.session:
                    continue
                pool.pop(at)
                self.taken.add(note.number)
                if written is not None:
                    self.out[note.number] = written
                break
        return self.out.get(note.number)


def _header(note: notes.NoteEntry, label: Label) -> bytes:
    """The note's header with label: its time kept as the header gave it, never parsed again."""
    source = note.source or "memory.md"
    line = notes.header_line(
        label.kind, note.time, note.session, label.klass, label.untrusted, source
    )
    return line.encode("utf-8")


def make_strict(staged: Home) -> Strict:
    """Make every header of the staged notes.md at least as strict as the staged journal's line
    of its note (written atomically); what was changed. notes.md has no limit (spec 3): it is
    read a note at a time, once for each pass of the pairing (the first also finds what it
    holds that memoryd does not write), and once more, when a header is to change, to write it
    as it is read into the atomic write's temporary file; never held whole."""
    path = staged.memory_file("notes.md")
    shown = _Shown()
    pairing: _Pairing | None = None  # the journal is read once a note needs it
    lines = 0  # newlines before the piece at hand
    try:
        with open_read(path) as f:
            for start, data, parsed in notestream.blocks(notestream.file_chunks(f)):
                if start == 0:
                    shown.leading = notes.leading_said(data)
                for note in parsed:
                    if note.damaged:
                        said = notestream.damage_said(note, data, start, lines)
                        shown.damaged.append((note.number, said))
                    if forgottenmarker.is_marker(note.text):
                        continue
                    if pairing is None:
                        pairing = _Pairing(_writes(Journal(staged).month_files()))
                    pairing.pair(note, True)
                lines += data.count(b"\n")
    except FileNotFoundError:
        return Strict([])
    if pairing is None:
        return Strict([], shown.said(set()))
    made: list[tuple[int, str, str]] = []
    labels: dict[int, Label] = {}
    for note in _notes(path):
        if forgottenmarker.is_marker(note.text):
            continue
        written = pairing.pair(note, False)
        claimed = Label(note.kind, note.klass, note.untrusted)
        if written is None or not claimed.laxer_than(written.label):
            continue
        labels[note.number] = claimed.with_(written.label)
        made.append((note.number, note.text, because(claimed, written, "the archive's")))
    if made:
        with open_read(path) as f:
            atomic_write(path, _strict_bytes(f, labels))
    return Strict(made, shown.said(set(labels)))


@dataclass
class _Shown:
    """What notes.md holds that is no note memoryd writes: text before the first header, the
    damaged headers by number."""

    leading: str | None = None
    damaged: list[tuple[int, str]] = field(default_factory=list)

    def said(self, mended: set[int]) -> tuple[str, ...]:
        """Its lines, but for the damaged headers made strict (now headers memoryd writes)."""
        said = [line for number, line in self.damaged if number not in mended]
        return tuple(([self.leading] if self.leading else []) + said)


def _notes(path: Path) -> Iterator[notes.NoteEntry]:
    with open_read(path) as f:
        yield from notestream.entries(notestream.file_chunks(f))


def _strict_bytes(f, labels: dict[int, Label]) -> Iterator[bytes]:
    """notes.md (the open file f) with the header of each note in labels made with its label,
    a note at a time: its time kept as the header gave it, a byte-order mark before it kept,
    the line's end kept."""
    for start, data, parsed in notestream.blocks(notestream.file_chunks(f)):
        for note in parsed:
            label = labels.get(note.number)
            if label is None:
                continue
            at = note.start - start
            end = data.find(b"\n", at)
            end = len(data) if end == -1 else end
            begin = at + (3 if data.startswith(b"\xef\xbb\xbf", at) else 0)
            if data[end - 1 : end] == b"\r":
                end -= 1
            data = data[:begin] + _header(note, label) + data[end:]
        yield data
