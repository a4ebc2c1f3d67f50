"""What a restore leaves out of the files it lays: the texts the owner made memoryd forget after the
archive was made.

A forget lists the digest of each text it takes in forgotten.jsonl (forgetlines.Forgot), with its
time; an archive made after that forget lists it too. So the forgets the home lists and the
archive does not are those made after it (or in another home): the archive may still hold their
texts, and laid as it is it would put them back into every prompt. Before the plan is written
(lay.py), the staged files are treated as the forget treated the home's: an entry of memory.md or
user.md whose digest is listed is removed, a note gets the marker in place of its text (its
header kept, its key listed so the index skips it), and the staged journal's older copies, the
recall log's queries and the pending writes that hold such a text are scrubbed (scrub.py). Each
identity file changed gets a journal line of its own, action "forget", whose before holds the
marker where the text was: the journal's last after is what the file holds (no hand edit is
seen), and `memory log` shows the forget; the lines name the staged writes of pending.jsonl the
scrub drops (a line of its own when no file changed), which are then resolved, not lost. memoryd
never had the text: it is found in the staged files by its digest, and only the marker is written.
"""

import datetime as dt
import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import erasing, matching, scrub
from memoryd.data.places import notes_of, recall_months
from memoryd.errors import FileDamaged
from memoryd.home import Home, atomic_write, open_read
from memoryd.journal import forgetlines, forgetread, forgotten, forgottenmarker, scan
from memoryd.journal.boundedfile import with_lines
from memoryd.journal.journal import IDENTITY_FILES, Edit, Journal
from memoryd.journal.linefile import all_ids
from memoryd.memory import entries
from memoryd.memory.memfiles import read_entries
from memoryd.trust.caller import OWNER
from proto.plural import counted
from proto.trim import trim

FORGOT_ID = "restore"  # the forgot id of a restore's own forget lines: it names no entry
JUDGED = 1024  # texts remembered as not listed while the staged files are searched (_found)


@dataclass
class LeftOut:
    entries: int = 0
    notes: int = 0
    elsewhere: int = 0  # texts found only in the journal, the recall log or pending writes
    edits: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # of the notes marked
    # The digests its own forget lines list, each as the journal reads it (its time and line):
    # forgotten.jsonl must list them so, or it lacks what the journal names (keep_forgotten).
    texts: list[forgetlines.Forgot] = field(default_factory=list)

    def said(self) -> str:
        """The answer's sentence; "" when nothing was left out."""
        parts = []
        if self.entries:
            parts.append(counted(self.entries, "entry", "entries"))
        if self.notes:
            parts.append(counted(self.notes, "note"))
        if self.elsewhere:
            parts.append(
                f"{counted(self.elsewhere, 'text')} held only in the journal, the recall log or "
                "pending writes"
            )
        if not parts:
            return ""
        one = self.entries + self.notes + self.elsewhere == 1
        said = (
            f"{' and '.join(parts)} the owner made memoryd forget after this backup was made "
            f"{'was' if one else 'were'} left out"
        )
        if self.edits:
            said += f"; the restored journal says so as edit {', '.join(self.edits)}"
        return (
            said + "; this home's own forget edits went with its journal, which the archive's "
            "replaced, and what they forgot stays forgotten"
        )


def after_archive(home: Home, staged: Home) -> set[str]:
    """The digests of the texts the home forgot and the archive does not list as forgotten: a
    forget is its digest, time and journal line, so one made after the archive was (even of a text
    the archive lists as forgotten once before, in the same minute) is not among the archive's."""
    return {f.digest for f in forgotten.texts(home) - forgotten.texts(staged)}


def leave_out(staged: Home, digests: set[str], stamp: str, now: dt.datetime) -> LeftOut:
    """Take every text whose digest is in digests out of the staged files (see above)."""
    done = LeftOut()
    if not digests:
        return done
    texts = _found(staged, digests)
    if not texts:
        return done
    marker = forgottenmarker.marker(stamp)
    in_files: set[str] = set()
    journal = Journal(staged, restoring=True)
    listing = sorted(digests & {d for t in texts for d in forgotten.digests_of(t)})
    marked = _notes(staged, digests, marker)  # first: the journal lines name their keys
    done.notes = len(marked)
    done.keys = [forgotten.note_key(n) for n, _ in marked]
    in_files.update(t for _, t in marked)
    forgot = {"id": FORGOT_ID, "at": stamp, "keys": done.keys, "digests": listing}
    # The staged writes _scrub drops with the texts: named by the line, they are resolved by the
    # owner's forget in the restored home, never said lost (journal/forgotpending.py).
    resolved = scan.pending_ids(journal.month_files())
    # Always named, [] for none: a forget line without the key is an older memoryd's, which may
    # have taken a staged write unnamed (forgotpending.unnamed).
    forgot["pending"] = erasing.pending_in(staged.memory_file("pending.jsonl"), texts, resolved)
    for file in IDENTITY_FILES:
        try:
            current = read_entries(staged, file)
        except FileDamaged:  # laid as it is: the owner mends it, then forgets again
            continue
        gone = [e for e in current if forgotten.text_listed(e, digests)]
        if not gone:
            continue
        after = [e for e in current if not forgotten.text_listed(e, digests)]
        atomic_write(staged.memory_file(file), entries.file_bytes(after))
        before = [marker if e in gone else e for e in current]
        edit = _line(file, before, after, forgot)
        done.edits.append(journal.append(now, edit).id)
        done.entries += len(gone)
        in_files.update(gone)
    if (marked or forgot["pending"]) and not done.edits:
        line = _line(None, [], [], forgot, "notes.md" if marked else None)
        done.edits.append(journal.append(now, line).id)
    done.texts = [forgetlines.Forgot(d, stamp, edit) for edit in done.edits for d in listing]
    scrubbed = _scrub(staged, texts, marker)
    done.elsewhere = len({trim(t) for t in scrubbed} - {trim(t) for t in in_files})
    return done


def carried_over(
    staged: Home, now: dt.datetime, stamp: str, keys, texts, pending: Collection[str] = ()
) -> str | None:
    """A forget line in the staged journal for the keys and digests a restore carries over from
    the home into the staged forgotten.jsonl, those the staged journal's forget lines do not
    name: the home's own forget lines go with its journal, and without this a damaged line of
    the restored file would have nothing to fall back on (forgotten.py). Each digest keeps its
    forget's time and edit. pending: the staged writes the home's forgets took away; those the
    staged journal does not resolve and its pending.jsonl does not hold (an archive of another
    home may wait on the same id) are named too, or the restored home, whose ids go on after the
    home's, would say them lost. The line's id, or None when there was nothing to add."""
    named = forgetread.forgets(staged)
    keys = [key for key in keys if key not in named.keys]
    texts = sorted(set(texts) - named.texts, key=lambda f: (f.time, f.digest, f.edit))
    months = Journal(staged).month_files()
    held = set(all_ids(staged.memory_file("pending.jsonl")))
    pending = sorted(set(pending) - scan.pending_ids(months) - held)
    if not keys and not texts and not pending:
        return None
    forgot = {
        "id": FORGOT_ID,
        "at": stamp,
        "keys": keys,
        "digests": [],
        "carried": [f.line() for f in texts],
        "pending": pending,  # [] for none, as every forget line of this memoryd names them
    }
    return Journal(staged, restoring=True).append(now, _line(None, [], [], forgot)).id


def keep_forgotten(
    staged: Home, keys: list[str], stamp: str, texts: frozenset[forgotten.Forgot] = frozenset()
) -> tuple[list[str], list[forgotten.Forgot]]:
    """Add to the staged forgotten.jsonl the keys and the digests it does not list (made if the
    archive holds none), before the plan is written: laid with it, they cannot be lost by a kill
    after the point of no return, and a disk error here leaves the home as it was. A digest keeps
    its forget's time and edit. The keys and digests added."""
    listed = forgotten.held(staged)  # on lines of the file: the staged journal's keys may not be
    missing = [key for key in keys if key not in listed]
    on_lines = forgotten.held_texts(staged)  # the file's own: the staged journal's are not
    lacking = sorted(texts - on_lines, key=lambda f: (f.time, f.digest))
    if not missing and not lacking:
        return [], []
    rows = [{"key": key, "time": stamp, "edit": "restore"} for key in missing]
    lines = "".join(json.dumps(row) + "\n" for row in [*rows, *(f.line() for f in lacking)])
    # The archive's file a block at a time, never whole: it may be far larger than memoryd makes
    # it, and its damaged lines are laid as they are, read at start as damaged (forgotten.py).
    where = forgotten.path(staged)
    atomic_write(where, with_lines(where, lines.encode()))
    return missing, lacking


def _line(file, before: list[str], after: list[str], forgot: dict, to: str | None = None) -> Edit:
    return Edit(
        **OWNER.head(),
        action="forget",
        file=file,
        to=file or to,
        before=before,
        after=after,
        notes=[],
        forgot=forgot,
    )


def _notes(staged: Home, digests: set[str], marker: str) -> list[tuple[int, str]]:
    """notes.md with each note whose digest is listed marked; (number, text) of each. Read a
    note at a time (places.notes_of), as notes.md has no limit."""
    held = [
        (n.number, n.text)
        for n in notes_of(staged)
        if not forgottenmarker.is_marker(n.text) and forgotten.text_listed(n.text, digests)
    ]
    if held:
        erasing.mark_notes(staged, [n for n, _ in held], [t for _, t in held], marker)
    return held


def _scrub(staged: Home, texts: set[str], marker: str) -> set[str]:
    """The journal's older copies, the recall log's queries and pending writes, as forget does;
    the texts taken out of any of them (only those are said to be left out)."""
    months = Journal(staged).month_files()
    recalls = recall_months(staged)
    pending = staged.memory_file("pending.jsonl")
    taken: set[str] = set()
    for text in sorted(texts):
        changed = 0
        for path in months:
            change = erasing.journal_change(text, marker)
            changed += scrub.rewrite(path, text, change, scrub.journal_dumps)
        for path in recalls:
            change = erasing.query_change(text, marker)
            changed += scrub.rewrite(path, text, change, scrub.compact_dumps)
        changed += scrub.rewrite(pending, text, erasing.pending_change(text), scrub.journal_dumps)
        if changed:
            taken.add(text)
    return taken


def _found(staged: Home, digests: set[str]) -> set[str]:
    """The texts the staged files hold whose digest is listed: their entries and notes, and the
    values of the journal, the recall log and the pending writes that carry what was written (as
    forget takes them: matching.py), never a field that says how it was written. Only those are
    kept as they are read: notes.md (read a note at a time), the journal and the recall log have
    no limit."""
    seen: set[str] = set()
    # Texts lately found not listed: a journal line carries its file's entries, line after line,
    # and each is judged (a digest) once while it stays among the last JUDGED.
    judged: dict[str, None] = {}

    def take(texts) -> None:
        for text in texts:
            if text in seen or text in judged:
                continue
            if trim(text) and forgotten.text_listed(text, digests):
                seen.add(text)
                continue
            if len(judged) >= JUDGED:
                judged.clear()
            judged[text] = None

    for file in IDENTITY_FILES:
        try:
            take(read_entries(staged, file))
        except FileDamaged:
            pass
    take(n.text for n in notes_of(staged))
    places = [
        *((path, _journal_texts) for path in Journal(staged).month_files()),
        *((path, _query_texts) for path in recall_months(staged)),
        (staged.memory_file("pending.jsonl"), _pending_texts),
    ]
    for path, written in places:
        for value in _lines(path):
            if not isinstance(value, dict):
                continue
            try:
                take(written(value))
            except RecursionError:  # nested deeper than any line memoryd writes
                continue
    return seen


def _lines(path: Path) -> Iterator[object]:
    try:
        f = open_read(path)
    except FileNotFoundError:
        return
    with f:
        for raw in f:
            try:
                yield json.loads(raw)
            except (ValueError, RecursionError):
                continue


def _journal_texts(line: dict) -> Iterator[str]:
    """What a journal line holds that forget would take (matching.journal_change)."""
    for key in ("before", "after"):
        if isinstance(line.get(key), list):
            yield from (v for v in line[key] if isinstance(v, str))
    if isinstance(line.get("notes"), list):
        yield from (n["text"] for n in line["notes"] if isinstance(n, dict) and _text(n, "text"))
    note = line.get("note")
    if isinstance(note, dict) and _text(note, "ref"):
        yield note["ref"]


def _query_texts(line: dict) -> Iterator[str]:
    if _text(line, "query"):
        yield line["query"]


def _pending_texts(line: dict) -> Iterator[str]:
    yield from matching.call_texts(line.get("args"))


def _text(value: dict, key: str) -> bool:
    return isinstance(value.get(key), str)
