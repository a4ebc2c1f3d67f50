"""bxctl memory import FILE: an export's items brought in as the owner's journalled edits.

The file (an export in jsonl, handed over in backups/, at most IMPORT_MAX bytes) is read and every
line checked before anything is written: a line of the wrong shape, or an entry with an empty
text, a session or a time that is not one, refuses the import, naming its number. Then each item
goes through the same rules as any write. An entry from a trusted write at or below [index]
max_class is added to its file (the check, the entry rules, the limit; one journal line per
entry, action "import", with the provenance it came with); an entry marked untrusted or above
max_class becomes a note with its label, never identity; a note is appended to notes.md with its
header (kind, time, session, class, untrusted). An item already there is skipped, as are the
marker a forget leaves where a note was and a note with no text (a header written by hand with
nothing under it, which an export made before such notes were left out holds); a note already
there under another label is never appended again (importsame.py says which label stays), nor an
entry of this home come back as a note (importentry.py); an entry its file has no room for is
kept as a note, said so with how to promote it; one that fails the check is named with the
reason. A note made of an entry, or brought in, is the owner's data moving between homes, as is a
note memoryd writes when an entry leaves its file: the check and the entry rules hold, a
session's 1,000 characters for a new note do not (an entry may be longer, and the next home must
take this one's notes back), up to NOTE_MAX bytes: memoryd writes none near it, and a text of
megabytes held as one note would cost every later look for it (a forget's) as much again; a longer
one is not imported, said with its length (the export file still holds it). An item whose text
the owner made memoryd forget (its digest is in forgotten.jsonl: an older export still holds it)
is skipped and said to be forgotten, whatever else it would be: nothing forgotten comes back
through an import. --dry-run says all that and writes nothing. importrun.py applies the items, a
batch at a time. A file that is not UTF-8 (an export re-saved as UTF-16) is refused naming its
encoding (importtext.py) before any line is read.
"""

import array
import datetime as dt
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Literal

from pydantic import ValidationError

from memoryd.data import exchange, importentry, importsame, importtext, layout
from memoryd.data.importitems import EntryItem, Item, item_of
from memoryd.data.journalled import Label
from memoryd.errors import AdminRefused, EditRefused
from memoryd.home import Home, open_read
from memoryd.journal import forgotten, forgottenmarker
from memoryd.memory import check, edits, entries, notes
from memoryd.memory.memfiles import read_entries
from memoryd.trust import classrule
from proto.backupformat import IMPORT_MAX
from proto.messages import SESSION_ID_PATTERN, describe
from proto.tools import AddArgs
from proto.trim import trim

SESSION_ID = re.compile(SESSION_ID_PATTERN)  # matched whole (fullmatch): $ would take a "\n"
FILE_ARG: dict[str, Literal["memory", "user"]] = {"memory.md": "memory", "user.md": "user"}


def read_export(home: Home, name: str) -> bytes:
    """The file backups/name, at most IMPORT_MAX bytes of it: never a FIFO, a link or a folder
    (refused without waiting or reading), never read whole when it is larger."""
    if not layout.NAME.fullmatch(name):
        raise AdminRefused(f"refused: {name[:64]!r} is not the name of a file in backups/")
    path = layout.backups(home) / name
    try:
        with open_read(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size > IMPORT_MAX:
                raise AdminRefused(f"refused: {name} is over {IMPORT_MAX:,} bytes")
            # What the file holds and a byte more (read(IMPORT_MAX + 1) would take the limit's
            # bytes for any file); the rest, up to the limit, only if it grew since fstat.
            data = f.read(size + 1)
            if len(data) > size:
                data += f.read(IMPORT_MAX + 1 - len(data))
    except FileNotFoundError:
        raise AdminRefused(f"refused: backups/ holds no file {name}") from None
    except OSError as e:
        raise AdminRefused(f"refused: {name} cannot be read ({e.strerror or e})") from None
    if len(data) > IMPORT_MAX:
        raise AdminRefused(f"refused: {name} is over {IMPORT_MAX:,} bytes")
    return data


def _head(line: bytes) -> None:
    try:
        head = json.loads(line.decode("utf-8"))  # checked UTF-8 (importtext), its mark left out
    except RecursionError:
        raise AdminRefused("refused: line 1 is JSON nested too deeply to be an export") from None
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("format") != exchange.FORMAT:
        raise AdminRefused("refused: line 1 is not the header of a boxmaker memory export")
    version = head.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise AdminRefused(
            f"refused: the export's header gives its format version as {version!r:.24}, not a "
            f"whole number; this memoryd reads format {exchange.VERSION}"
        )
    if version > exchange.VERSION:
        raise AdminRefused(
            f"refused: the export is format {version}, made by a newer memoryd; this memoryd "
            f"reads format {exchange.VERSION}"
        )
    if version < 1:
        raise AdminRefused(
            f"refused: the export's header gives format {version}, which no memoryd writes; "
            f"this memoryd reads format {exchange.VERSION}"
        )


def _problem(item: Item) -> str | None:
    """What is wrong with an item of the right shape, or None: found before anything is
    written, so that an import never stops part way on its own input."""
    p = item.provenance
    if item.note in ("moved", "dropped") and item.source is None:
        # Which file it left is part of the note (notes.md's header says it): not guessed.
        return f"is a {item.note} note without its source (the file it left)"
    if isinstance(item, EntryItem) and not trim(item.text):
        return "has an empty text"  # an export never writes one: entries.parse skips them
    if p.session is not None and not SESSION_ID.fullmatch(p.session):
        return "has a provenance session of the wrong shape"
    if p.time is not None:
        try:
            exchange.parse_time(p.time)
        except ValueError:
            shown = p.time if len(p.time) <= 40 else p.time[:39] + "…"
            return f"has a provenance time {shown!r} that is not a time (2026-09-24T21:02Z)"
    return None


class Items:
    """An export's items, every line checked: the file's bytes and where each item's line
    starts, each item parsed again when it is taken. So an import holds its file once and a few
    bytes an item, not a model an item (ten times the file, and kept to its end)."""

    def __init__(self, data: bytes):
        self._data = data
        self._starts = array.array("Q")
        self._numbers = array.array("Q")

    def add(self, start: int, number: int) -> None:
        self._starts.append(start)
        self._numbers.append(number)

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, at: int) -> tuple[int, Item]:
        start = self._starts[at]
        end = self._data.find(b"\n", start)
        raw = self._data[start : end if end >= 0 else len(self._data)]
        return self._numbers[at], item_of(raw)  # checked by parse already

    def __iter__(self) -> Iterator[tuple[int, Item]]:
        return (self[at] for at in range(len(self)))


def parse(data: bytes) -> Items:
    """(line number, item) of every item, checked one line at a time; AdminRefused naming the
    first bad line."""
    start = importtext.text_start(data)
    end = data.find(b"\n", start)
    end = len(data) if end < 0 else end
    _head(data[start:end])
    out = Items(data)
    number = 1
    while end < len(data):
        start = end + 1
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        raw = data[start:end]
        if not raw.strip():
            continue
        _check(number, raw)
        out.add(start, number)
    return out


# A line whose kind is missing or neither entry nor note: said plainly, not in pydantic's words.
_KIND_ERRORS = {"union_tag_invalid", "union_tag_not_found"}
_NO_KIND = 'its "kind" is neither "entry" nor "note"'


def _check(number: int, raw: bytes) -> None:
    try:
        item = item_of(raw)
    except ValidationError as e:
        first = e.errors(include_url=False, include_input=False)[0]
        why = _NO_KIND if first["type"] in _KIND_ERRORS else describe(e)[:300]
        raise AdminRefused(
            f"refused: line {number} is not an export item: {why}; nothing was imported"
        ) from None
    except (ValueError, RecursionError):
        raise AdminRefused(
            f"refused: line {number} is not an export item; nothing was imported"
        ) from None
    problem = _problem(item)
    if problem is not None:
        raise AdminRefused(f"refused: line {number} {problem}; nothing was imported")


def _when(text: str | None, now: dt.datetime) -> dt.datetime:
    return now if text is None else exchange.parse_time(text)


NoteKey = tuple[str, str, str | None, str, str | None, str, bool]


def note_key(
    kind: str,
    text: str,
    time: str | None,
    session: str,
    source: str | None,
    klass: str,
    untrusted: bool,
) -> NoteKey:
    return (kind, text, time, session, source if kind != "noted" else None, klass, untrusted)


class State:
    """The files as the import goes (for --dry-run, and to plan each write against).

    notes.md is compared note by note, whole (kind, text, header time, session, source, label),
    and as many times as a note is there: the k-th copy of a note in the file imported is skipped
    when notes.md holds k copies of it that this import did not write, so that an export holding
    one text twice brings both and importing it again brings neither (nor does a second import
    running beside it). A note with no time is compared without it. The notes are counted by a
    digest of their key, a few dozen bytes each, not the key's strings: a dry run of a file of
    short notes counts a note for each of its lines. They are also counted by what they are, label
    aside (importsame.Counts): a note held under another label is never appended again."""

    def __init__(self, home: Home):
        self.home = home
        self.same = importsame.Counts()
        self.same_key: importsame.SameKey | None = None
        self.relabel: importsame.Relabel | None = None  # of the note decide() said to relabel
        self.entries = {f: read_entries(home, f) for f in FILE_ARG}
        self.had: Counter[bytes] = Counter()  # by _digest(key)
        self.seen: Counter[bytes] = Counter()
        self.mine: Counter[bytes] = Counter()  # the notes this import appended
        self.key: NoteKey | None = None  # of the note decide() said to append last
        self.end = 0
        self.forgotten = _forgotten(home)
        self._notes(home)

    def _notes(self, home: Home) -> None:
        """Count the notes others appended since self.end (all of them, if notes.md shrank)."""
        try:
            with open_read(home.memory_file("notes.md")) as f:
                size = os.fstat(f.fileno()).st_size
                if size < self.end:  # rewritten (a forget): counted again, less this import's
                    self.had, self.end = Counter(), 0
                    self.had.subtract(self.mine)
                    self.same.restart()
                f.seek(self.end)
                data = f.read(size - self.end)
        except FileNotFoundError:
            data, size = b"", 0
        for n in notes.parse(data):
            key = note_key(n.kind, n.text, n.time, n.session, n.source, n.klass, n.untrusted)
            self.had[_digest(key)] += 1
            self.had[_digest(_timeless(key))] += 1
            self.same.take(importsame.note_same(n))
        self.end = size

    def rewritten(self, home: Home) -> None:
        """notes.md was rewritten by this import (a note relabelled): every note counted again."""
        self.had, self.end = Counter(), 0
        self.had.subtract(self.mine)
        self.same.restart()
        self._notes(home)

    def refresh(self, home: Home) -> None:
        """The files as they are now: other writes come between an import's batches."""
        self.entries = {f: read_entries(home, f) for f in FILE_ARG}
        self.forgotten = _forgotten(home)
        self._notes(home)

    def appended(self, home: Home) -> None:
        """The note decide() last said to append was appended by this import."""
        if self.key is not None:
            self.mine[_digest(self.key)] += 1
            self.mine[_digest(_timeless(self.key))] += 1
        if self.same_key is not None:
            self.same.take(self.same_key, self.same.mine)
        self.end = os.path.getsize(home.memory_file("notes.md"))

    def first_time(self, key: NoteKey) -> bool:
        digest = _digest(key)
        self.seen[digest] += 1
        self.key = key
        return self.seen[digest] > self.had[digest]


def _forgotten(home: Home) -> dict[str, forgotten.Forgot]:
    """The texts the owner made memoryd forget, by digest (the last forget of each)."""
    return {f.digest: f for f in sorted(forgotten.texts(home), key=lambda f: f.time)}


FORGOTTEN = "forgotten"  # what decide() says of an item whose text the owner made memoryd forget


def _timeless(key: NoteKey) -> NoteKey:
    return (key[0], key[1], None, *key[3:])


def _digest(key: NoteKey) -> bytes:
    return hashlib.blake2b(repr(key).encode(), digest_size=16).digest()


def decide(item: Item, state: State, max_class: str) -> tuple[str, str]:
    """(what: add, note:KIND, skip or FORGOTTEN, which is skipped too, the line said to the
    owner) for item, updating state."""
    if not trim(item.text):  # a note: an empty entry refuses the file (_problem)
        return "skip", "a note with no text (a header with nothing under it), not memory: skipped"
    found = (state.forgotten.get(d) for d in forgotten.digests_of(item.text))
    forgot = next((f for f in found if f is not None), None)
    if forgot is not None:
        edit = f" (edit {forgot.edit})" if forgot.edit and forgot.edit != "journal" else ""
        return FORGOTTEN, (
            f"skipped: the owner made memoryd forget this text on {forgot.time}{edit}; to bring "
            "it back, add it again yourself"
        )
    if forgottenmarker.is_marker(trim(item.text)):
        # An export made before markers were left out of it: what stood where its owner forgot a
        # note would be recalled here as a note, with the forgotten note's provenance.
        return "skip", "a forgotten note (the marker left by a forget), not memory: skipped"
    p = item.provenance
    if isinstance(item, EntryItem):
        file = item.file
        if p.untrusted or classrule.above(p.klass, max_class):
            if any(trim(e) == trim(item.text) for e in state.entries[file]):
                return "skip", importentry.entry_kept(file, Label("entry", p.klass, p.untrusted))
            why = "untrusted" if p.untrusted else f"{p.klass}, above {max_class}"
            return _note(item, "noted", state, f"becomes a note ({why}), never identity")
        current = state.entries[file]
        try:
            plan = edits.plan(AddArgs(action="add", file=FILE_ARG[file], text=item.text), current)
        except EditRefused as e:
            reason = str(e).removeprefix("refused: ")
            if trim(item.text) in current:
                return "skip", f"already in {file}"
            length = entries.length([*current, entries.normalise(item.text)])
            if length > entries.LIMITS[file]:
                return _note(item, "noted", state, _full(file, length, item.text))
            return "skip", f"not imported into {file}: {reason}"
        state.entries[file] = list(plan.after)
        return "add", f"added to {file}"
    kind = item.note
    if p.untrusted and kind != "noted":
        kind = "noted"
    return _note(item, kind, state, "appended to notes.md")


def _full(file: str, length: int, text: str) -> str:
    """What is said of an entry its file has no room for: it is kept, as a note, and how the
    owner brings it into the file (the model's consolidate is not the owner's to run)."""
    limit, arg = entries.count(entries.LIMITS[file]), file.removesuffix(".md")
    alone = entries.length([entries.normalise(text)])
    if alone > entries.LIMITS[file]:  # no room ever: promote would refuse it too
        return (
            f"longer than {file} may be ({entries.count(alone)} of {limit} characters): kept as "
            f"a note instead; bxctl memory edit {arg} can take in a shorter version of it"
        )
    return (
        f"{file} would be {entries.count(length)} of {limit} characters: kept as a note "
        f"instead; make room with bxctl memory edit {arg}, then bxctl memory promote it"
    )


# The most a note made at import may hold: far above any entry or note memoryd writes (a few
# thousand characters), far below what would make one note a burden to the journal and the index.
NOTE_MAX = 64 << 10


def _note(item: Item, kind: str, state: State, said: str) -> tuple[str, str]:
    text = trim(item.text)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > NOTE_MAX:
        return "skip", (
            f"not imported: {size:,} bytes, more than the {NOTE_MAX:,} a note may hold; the "
            "export file still holds it"
        )
    p = item.provenance
    time = notes.header_time(_when(p.time, dt.datetime.now(dt.UTC))) if p.time else None
    source = item.source  # a moved or dropped note's own (_problem); none for a noted one
    session = p.session or "owner"
    key = note_key(kind, text, time, session, source, p.klass, p.untrusted)
    same = importsame.same_key(kind, text, time, session, source)
    held = state.same.held(same)  # the same note, whatever its label
    state.same_key = same
    if not state.first_time(key):
        return "skip", "already in notes.md"
    incoming = Label(kind, p.klass, p.untrusted)
    entry = importentry.entry_note(state.home, state.entries, same)
    if entry is not None:
        said = importentry.entry_kept(entry[0], incoming)
        return "skip", f"{said} (edit {entry[1]} of session {same[3]} brought it in)"
    if held:
        settled = importsame.settle(state.home, same, incoming)
        state.relabel = settled.relabel
        return settled.what, settled.said
    # The check, and the entry rules for what was an entry; not a session's note length (module
    # docstring).
    was_entry = isinstance(item, EntryItem) or kind != "noted"
    problem = (entries.entry_problem(text) if was_entry else None) or check.problem(text)
    if problem is not None:
        return "skip", f"not imported: {problem}"
    return f"note:{kind}", said


def line(number: int, item: Item, said: str) -> str:
    return f"line {number}: {item.kind} {edits.shorten(item.text)!r}: {said}"
