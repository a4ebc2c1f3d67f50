"""An import's note that this home already holds under another label: never a second copy.

A note is the same note when its kind (and for a moved or dropped one, the file it left), text,
session and header time are the same: its label (class, untrusted) is what a home says of it, not
part of what it is. The label can differ without anyone having lied: a home that held the text
from a session that read untrusted content raised the claim of another home's clean note of it
(importclaim.py), and exported it so; brought back, it is the first home's own note. Appending it
would give recall, search, stats, promote and forget two notes of one write.

Which label stays, the home's or the export's:

- this home's journal records that very note as its own session's write (a line of that session,
  not an import, noting that text at that minute) with the label notes.md gives it: memoryd's own
  record of what its session had read, which no other home saw. The home's label stays and the
  item is skipped. The export's stricter label is another home's view of the text (its own note of
  the text comes in as a note of its own session, with its label), not a fact about this session;
  so nothing untrusted is made trusted;
- otherwise (the home's copy came in by an import, was written by hand, or its journal line is
  gone or labels it otherwise) nothing here settles which is right: the stricter of the two is
  kept. When that is the export's, the home's note is given it in place (notes.md rewritten
  atomically, then a journal line, action "import", naming the note and the labels), and the
  index reads notes.md again; when it is the home's, the item is skipped.

The import's answer names each such item in its line, with which label stayed and why.
"""

import hashlib
import logging
from collections import Counter
from dataclasses import dataclass

from memoryd.data import notesswap
from memoryd.data.journalled import Label, line_label
from memoryd.errors import EditRefused, WriteNotTakenBack
from memoryd.home import Home, NotRegular, open_read, read_file
from memoryd.journal import rollback
from memoryd.journal.journal import Edit, EditLine, Journal
from memoryd.journal.linefile import parse_line
from memoryd.journal.mapfile import line_bytes, mapped
from memoryd.memory import notes, untaken
from proto.trim import trim

log = logging.getLogger(__name__)

SameKey = tuple[str, str, str | None, str, str | None]  # kind, text, header time, session, source


def same_key(kind: str, text: str, time: str | None, session: str, source: str | None) -> SameKey:
    return (kind, text, time, session, source if kind != "noted" else None)


def digest(key: SameKey) -> bytes:
    return hashlib.blake2b(repr(("same", *key)).encode(), digest_size=16).digest()


def timeless(key: SameKey) -> SameKey:
    return (key[0], key[1], None, key[3], key[4])


def note_same(n: notes.NoteEntry) -> SameKey:
    return same_key(n.kind, n.text, n.time, n.session, n.source)


def shown(label: Label) -> str:
    trust = "untrusted" if label.untrusted else "trusted"
    return f"{trust}, {label.klass}"


@dataclass(frozen=True)
class Relabel:
    """A note of notes.md to be given a stricter label: found again by its number and what it
    is, as it was when planned, so that a notes.md changed since is never written over."""

    number: int
    key: SameKey
    was: Label
    now: Label


@dataclass(frozen=True)
class Settled:
    """What an import does with a note held under another label: skip it, or relabel."""

    what: str  # "skip" or "relabel"
    said: str
    relabel: Relabel | None = None


def _held(home: Home, key: SameKey) -> list[notes.NoteEntry]:
    """The notes of notes.md that are the note key names (any time, for a key without one)."""
    try:
        data = read_file(home.memory_file("notes.md"))
    except FileNotFoundError:
        return []
    want = key if key[2] is not None else None
    out = []
    for n in notes.parse(data):
        same = note_same(n)
        if same == want or (want is None and timeless(same) == key):
            out.append(n)
    return out


def recorded(home: Home, months, note: notes.NoteEntry) -> str | None:
    """The id of this home's journal line by the note's own session (no import: an import's line
    is the owner's, its label a claim) that wrote this very note, at its header's minute, with
    the label its header gives; None when the journal records no such write."""
    session = f'"session": "{note.session}"'.encode()
    minute = f'"time": "{note.time[:-1]}'.encode()  # 2026-12-05T00:41Z: the line's seconds follow
    header = Label(note.kind, note.klass, note.untrusted)
    for path in months:
        with mapped(path) as data:
            at = 0
            while (found := data.find(minute, at)) != -1:
                first = data.rfind(b"\n", 0, found) + 1
                end = data.find(b"\n", found)
                end = len(data) if end == -1 else end
                at = end
                raw, cut = line_bytes(data, first, end)
                if cut or session not in raw:
                    continue
                record = parse_line(raw, EditLine)
                if isinstance(record, str) or record.action == "import":
                    continue
                if record.session != note.session or record.time is None:
                    continue
                if record.time[:16] != note.time[:16]:
                    continue
                if not any(n.kind == note.kind and trim(n.text) == note.text for n in record.notes):
                    continue
                if note.kind == "noted":
                    _, label = line_label(record, "noted")
                    if label != header:
                        continue
                elif note.klass != "private" or note.untrusted:
                    continue  # a moved entry's class is its entry's write's: not settled here
                return record.id
    return None


def settle(home: Home, key: SameKey, incoming: Label) -> Settled:
    """What to do with an item that is the note key names, which this home holds under another
    label than incoming (the item's label after importclaim)."""
    held = [n for n in _held(home, key) if not n.damaged]
    months = Journal(home).month_files()
    if not held:  # a damaged header is read as an untrusted note already: nothing laxer here
        return Settled("skip", "already in notes.md (its header is damaged: read as untrusted)")
    for note in held:
        edit = recorded(home, months, note)
        if edit is not None:
            mine = Label(note.kind, note.klass, note.untrusted)
            return Settled(
                "skip",
                f"already in notes.md as {shown(mine)}, the label this home's journal gave "
                f"session {note.session}'s own write of it (edit {edit}); the export marks it "
                f"{shown(incoming)}: this home's label kept, since what its own session had read "
                "is this home's record, the export's label another home's view of the text",
            )
    note = held[0]
    mine = Label(note.kind, note.klass, note.untrusted)
    strict = mine.with_(incoming)
    if strict == mine or note.kind != "noted" and strict.kind != note.kind:
        return Settled(
            "skip",
            f"already in notes.md as {shown(mine)}; the export marks it {shown(incoming)}: the "
            "stricter label, this home's, kept",
        )
    return Settled(
        "relabel",
        f"already in notes.md as {shown(mine)} (note {note.number}), which this home's journal "
        f"does not record as session {note.session}'s own write; the export marks it "
        f"{shown(incoming)}: no copy added, and the note made {shown(strict)} (the stricter "
        "label)",
        Relabel(note.number, note_same(note), mine, strict),
    )


def relabel(store, change: Relabel, imported: dict) -> str:
    """Give the note change names its stricter label (notes.md rewritten atomically, then the
    journal line); its edit id. EditRefused when notes.md no longer holds that note as planned.
    The caller reads notes.md into the index again (purge.reindex_notes). A crash between the
    rewrite and the line leaves the stricter header alone, which every reader follows; so does a
    failure that cannot be taken back, whose answer says so (_untaken)."""
    path = store.home.memory_file("notes.md")
    with store.lock:
        with open_read(path) as f:
            read = notesswap.opened(f)
            data = f.read()
        found = [n for n in notes.parse(data) if n.number == change.number]
        if (
            not found
            or note_same(found[0]) != change.key
            or Label(found[0].kind, found[0].klass, found[0].untrusted) != change.was
            or found[0].damaged
        ):
            raise EditRefused(f"refused: note {change.number} of notes.md changed meanwhile")
        note = found[0]
        end = data.find(b"\n", note.start)
        end = len(data) if end == -1 else end
        start = note.start + (3 if data.startswith(b"\xef\xbb\xbf", note.start) else 0)
        if data[end - 1 : end] == b"\r":
            end -= 1
        head = notes.header_line(
            change.now.kind,
            note.time,
            note.session,
            change.now.klass,
            change.now.untrusted,
            note.source or "memory.md",
        )
        line: dict[str, object] = {
            "session": "owner",
            "call": None,
            "taint": None,
            "untrusted": False,
            "action": "import",
            "file": None,
            "to": "notes.md",
            "before": [],
            "after": [],
            "notes": [],
            "imported": imported,
            "note": {
                "number": note.number,
                "session": note.session,
                "time": note.time,
                "was": {"class": change.was.klass, "untrusted": change.was.untrusted},
            },
        }
        # The line's id is worked out before notes.md is replaced: after it only the append is
        # left, and an OSError there puts the header back.
        when = store.now()
        try:
            planned = store.journal.line(when, Edit.model_validate(line))
        except OSError as e:
            raise store.not_applied("notes.md", "import", None, e) from None
        new = _swap(store, read, data[:start] + head.encode("utf-8") + data[end:], change)
        try:
            record = store.journal.append(when, planned)
        except OSError as e:
            if not _header_back(path, new, data):
                raise _untaken(change, e) from None
            raise store.not_applied("notes.md", "import", None, e) from None
    log.info(
        "notes.md: note %d of session %s made %s by an import (edit %s)",
        note.number,
        note.session,
        shown(change.now),
        record.id,
    )
    return record.id


def _swap(store, read: notesswap.Identity, rewrite: bytes, change: Relabel) -> notesswap.Identity:
    """notes.md replaced by rewrite, only while it is the file read: a save of the owner's made
    meanwhile stays, and the note is not relabelled (EditRefused). A swap that failed is answered
    by what notes.md holds after it: the rewrite, when notesswap could not take it back either."""
    path = store.home.memory_file("notes.md")
    try:
        new = notesswap.replace_read(path, read, [rewrite])
    except OSError as e:
        if _holds(path, rewrite):
            raise _untaken(change, e) from None
        raise store.not_applied("notes.md", "import", None, e) from None
    if new is None:
        raise EditRefused(f"refused: note {change.number} of notes.md changed meanwhile")
    return new


def _holds(path, rewrite: bytes) -> bool:
    """Whether notes.md holds rewrite (True when it cannot be read: it may)."""
    try:
        return read_file(path) == rewrite
    except OSError:
        return True


def _header_back(path, new: notesswap.Identity, data: bytes) -> bool:
    """notes.md as it was read (data) again after a relabel whose journal line failed, so that
    it holds no change the journal does not; a save of the owner's since, which replaced the
    relabel, stays. Whether notes.md no longer holds the relabel (False, logged, when it cannot
    be put back: the disk that refused the line refuses the rewrite too)."""
    try:
        notesswap.replace_read(path, new, [data])
    except OSError as e:
        log.error("%s: a relabel that failed cannot be taken back: %s", path, e.strerror or e)
        return False
    return True


def _untaken(change: Relabel, e: OSError) -> WriteNotTakenBack:
    """The answer to a relabel that failed (its swap or its journal line) and stayed in notes.md,
    its take-back failing too. Nothing journals it later: a notes.md header is no write's intent
    (memory/handedit.py journals memory.md and user.md), and every reader, the index at its next
    start too, follows the header; so the answer says that, never that notes.md is unchanged."""
    cause = rollback.first_cause(e)
    reason = str(cause) if isinstance(cause, NotRegular) else cause.strerror or str(cause)
    log.error(
        "notes.md: import by the owner not applied, and not taken back: %s; note %d may keep "
        "the label %s, with no journal line",
        reason,
        change.number,
        shown(change.now),
    )
    return WriteNotTakenBack(
        f"{untaken.head(reason, 'notes.md')}: note {change.number} made {shown(change.now)} "
        f"(it was {shown(change.was)}); memoryd follows the label notes.md gives, and journals "
        "no line of it, now or later"
    )


class Counts:
    """The notes of notes.md counted by what they are (SameKey), not their label: the k-th copy
    of a note in the file imported is the home's when notes.md holds k copies it did not write."""

    def __init__(self) -> None:
        self.had: Counter[bytes] = Counter()
        self.seen: Counter[bytes] = Counter()
        self.mine: Counter[bytes] = Counter()

    def take(self, key: SameKey, counter: Counter[bytes] | None = None) -> None:
        counter = self.had if counter is None else counter
        counter[digest(key)] += 1
        counter[digest(timeless(key))] += 1

    def restart(self) -> None:
        self.had = Counter()
        self.had.subtract(self.mine)

    def held(self, key: SameKey) -> bool:
        """The note key names is counted once more; whether notes.md holds it that often."""
        d = digest(key)
        self.seen[d] += 1
        return self.seen[d] <= self.had[d]
