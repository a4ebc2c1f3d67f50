"""Hand edits: memory.md or user.md changed outside memoryd, journalled as `hand-edit`.

The journal's last `after` for a file is what memoryd left in it. When the file's entries differ
from it at start or before a write, someone edited the file by hand: the change is journalled as
an edit with action `hand-edit`, session `owner`, its before (the journal's last after) and after
(the file now), so `bxctl memory show` explains it and undo can revert it like any edit.

A crash between the rename of a memoryd write and its journal append leaves the same picture, and
must not be called a hand edit. So before each rename memoryd writes the journal fields it is about
to append to memory/.writing.json (one write, no fsync: it only has to survive a killed process,
not a power cut). If the file now holds exactly that intent's after, and the journal's last after
is its before, the write was memoryd's: its journal line is appended as it would have been, with
`"recovered": true`, and the intent is dropped: once a write is journalled, a later look at a
file the owner put back by hand must never take it for a write still to be journalled, or for
one that never happened. A power cut in that window can still show up as a hand edit; that is
the one case left, and the record still holds the right before and after.

A hand edit saved while memoryd writes the file is never replaced by memoryd's write: the write
checks, under the write lock, that the file still holds what it was planned from and that the
journal already explains it (memfiles.replace_unchanged), and otherwise gives up with
ChangedByHand before anything stands; the store then journals the hand edit and plans the write
again from the file as the owner left it. So each line's before is the previous line's after.

A note appended to notes.md has the same window: its intent also names where notes.md ended and
the text appended, so that at start a note appended but not journalled gets its line, and an
append the kill tore is cut back (its journal line was never written).

memoryd's write of memory.md or user.md is an exchange (memfiles.replace_unchanged): a save of the
owner's that lands just before it is moved under memoryd's temporary name until it is exchanged
back. Killed in between, memoryd would find it at the next start among the temporary files a crash
leaves, which are removed. So a leftover beside memory.md or user.md is removed only when it holds
what some other place already holds: the file now, what the write intent says memoryd was writing
(or a start of that, torn by the kill) or writing over, or the after or before of one of the
journal's latest edits of the file. The last is memoryd's own exchanged-out copy when a kill
comes between a write's journal line and the removal of that copy: the text the file held before
the write, which its journal line holds as before. Anything else is the owner's and is kept as
memory.md.hand-edit-<time>, logged, for the owner to merge.

The journal's last after per file comes from the journal's index by file (journal/byfile.py),
which reads only what was appended since it last looked, so a write costs the same however long
the journal is.
"""

import contextlib
import datetime as dt
import errno
import json
import logging
import os
import stat
from pathlib import Path

from pydantic import ValidationError

from memoryd.errors import EditRefused, FileDamaged
from memoryd.home import Home, NotRegular, check_entry, open_file, open_read
from memoryd.journal import months, rollback, scan
from memoryd.journal.byfile import JournalIndex
from memoryd.journal.journal import IDENTITY_FILES, Edit, EditLine, Journal, utc
from memoryd.memory import entries
from memoryd.memory.memfiles import read_entries
from proto.files import read_at_most
from proto.plural import counted

log = logging.getLogger(__name__)
# The action of a write's intent marked as failed and not taken back (memory/untaken.py).
NOT_TAKEN_BACK = "not-taken-back"

INTENT_NAME = ".writing.json"
OWNER_SESSION = "owner"
HAND_EDIT = "hand-edit"


class Unjournalled(OSError):
    """A line of memoryd's hand-edit detection that cannot be appended to the journal (a full
    disk, an I/O error). The append's own OSError comes from a write or fsync on a descriptor and
    names no file, so this one names both the file the line is about and the journal month that
    could not be written; its strerror and errno are the append's, for the answers built from
    them (MemoryStore.not_applied)."""

    def __init__(self, file: str, what: str, journal: Path, error: OSError):
        super().__init__(error.errno, error.strerror or str(error), error.filename or str(journal))
        self.file = file
        self.what = what

    def __str__(self) -> str:
        return (
            f"{self.file}: {self.what} cannot be journalled now ({self.filename}: "
            f"{self.strerror}); it is tried again at the next write or start"
        )


class ChangedByHand(EditRefused):
    """A write that gave up because its file was edited by hand since it was planned (the hand
    edit is journalled): the store plans it again; its text answers when it keeps happening."""

    def __init__(self, file: str):
        super().__init__(
            f"refused: {file} was edited by hand while this edit was being applied; the hand "
            "edit is kept and journalled, and this edit was not applied: try again"
        )
        self.file = file


def intent_path(home: Home) -> Path:
    return home.memory / INTENT_NAME


def intend(home: Home, fields: dict, notes: tuple[int, str] | None = None) -> None:
    """Note the journal fields of the write about to be renamed into place, or (notes: the
    size of notes.md before, and the text appended) of the note about to be appended. Written
    like every file memoryd keeps: never through a link, never waiting on a FIFO; anything but a
    regular file there is NotRegular, naming the path."""
    value: dict = {"fields": fields}
    if notes is not None:
        value["notes_at"], value["block"] = notes
    data = json.dumps(value, ensure_ascii=False).encode("utf-8")
    path = intent_path(home)
    try:
        fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    except OSError as e:
        # A folder (EISDIR) or a FIFO without a reader (ENXIO): say what is there, and where.
        if e.errno in (errno.EISDIR, errno.ENXIO):
            check_entry(path)
        raise
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def forget(home: Home) -> None:
    """The write is journalled or taken back: its intent no longer stands. Only a regular file
    is removed: a folder or FIFO there is not memoryd's, and is left for the owner to see."""
    path = intent_path(home)
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)
    except OSError:
        pass


INTENT_MAX = 1_048_576


def read_intent(home: Home) -> dict | None:
    """The intent of the last write, or None (missing, torn, too large, not an object; a link,
    FIFO or folder there is named in a log line and not read)."""
    path = intent_path(home)
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as e:
        log.warning("%s: not read: %s", path, e if isinstance(e, NotRegular) else e.strerror)
        return None
    try:
        data = read_at_most(fd, INTENT_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > INTENT_MAX:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
        # What memoryd wrote encodes again; with a lone surrogate in it, it cannot be journalled.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):  # UnicodeDecodeError and -EncodeError are ValueErrors
        return None
    if isinstance(value, dict) and isinstance(value.get("fields"), dict):
        return value
    return None


class HandEdits:
    """Detects and journals hand edits; called by MemoryStore under its lock."""

    def __init__(self, home: Home, journal: Journal, index: JournalIndex, now):
        self.home = home
        self.journal = journal
        self.now = now
        self.index = index

    def detect(self) -> list[EditLine]:
        """Journal every identity file that differs from the journal's last after. The journal's
        end is looked at first: a last line a power cut tore is said (once) in memoryd's log."""
        self.journal.check_end()
        records = []
        self._removals_never_applied()
        note = self._unjournalled_note()
        if note is not None:
            records.append(note)
        for file in IDENTITY_FILES:
            record = self._detect(file)
            if record is not None:
                records.append(record)
        return records

    def _detect(self, file: str) -> EditLine | None:
        try:
            current = read_entries(self.home, file)
        except FileDamaged as e:
            log.warning("%s: not compared with the journal: %s", file, e)
            return None
        last = self.index.last_after(file)
        if current == last:
            return None
        intended = _intended_edit(read_intent(self.home))
        if (
            intended is not None
            and _is_unjournalled_write(intended, file, last, current)
            and not _journalled(self.journal, intended)
        ):
            intended.recovered = True
            # A write marked not taken back (memory/untaken.py) failed, was answered so, and
            # stayed in its file: said as that, not as a crash's.
            if intended.action == NOT_TAKEN_BACK:
                how = "memoryd's write that failed and could not be taken back"
                said = how
            else:
                how = "memoryd's write renamed into place before a crash"
                said = "memoryd's write was renamed into place but not journalled before a crash"
            record = self._journal(file, how, intended)
            # Journalled, the write's intent no longer stands: kept, a later hand edit of the
            # file back to its before or after would be taken for this write again.
            forget(self.home)
            log.info("%s: %s; journalled now as edit %s", file, said, record.id)
            return record
        edit = Edit(
            session=OWNER_SESSION,
            call=None,
            taint=None,
            untrusted=False,
            action=HAND_EDIT,
            file=file,
            to=file,
            before=last,
            after=current,
            notes=[],
        )
        record = self._journal(file, "edited outside memoryd: a hand edit", edit)
        log.info(
            "%s: edited outside memoryd (%s before, %s now); journalled as edit %s",
            file,
            counted(len(last), "entry", "entries"),
            f"{len(current):,}",
            record.id,
        )
        return record

    def _journal(self, file: str, what: str, edit: Edit) -> EditLine:
        """Append edit's line, or Unjournalled naming file and the journal month."""
        when = self.now()
        try:
            return self.journal.append(when, edit)
        except OSError as e:
            raise Unjournalled(file, what, months.append_path(self.home, utc(when)), e) from None

    def _unjournalled_note(self) -> EditLine | None:
        """A note appended to notes.md but not journalled before a crash: its line, appended
        now. It was when notes.md ends with exactly the block its intent names, where the
        intent says it went, and the journal's last line is not already it."""
        intent = read_intent(self.home)
        edit = _intended_edit(intent)
        if intent is None or edit is None or edit.to != "notes.md":
            return None
        appended = self._appended(intent)
        if appended is None:
            return None
        if appended is not True or _journalled(self.journal, edit):
            if appended is False:  # torn by the kill: cut
                rollback.cut_back(self.home.memory_file("notes.md"), intent["notes_at"])
                log.info("notes.md: a note's append torn by a crash was taken back")
            forget(self.home)
            return None
        edit.recovered = True
        record = self._journal("notes.md", "memoryd's note appended before a crash", edit)
        forget(self.home)
        log.info(
            "notes.md: memoryd's note was appended but not journalled before a crash; "
            "journalled now as edit %s",
            record.id,
        )
        return record

    def _removals_never_applied(self) -> None:
        """A write of memory.md or user.md killed after it appended the entries it moves or
        drops to notes.md, before its file was renamed into place: the file still holds what the
        write was planned from, so the edit never happened, and the appended entries are cut
        back (whole or torn), never left as notes of a move or drop no journal line explains.
        A write the journal holds stood, whatever the file holds now (the owner may have put its
        before back by hand since): its intent is dropped and notes.md left as it is."""
        intent = read_intent(self.home)
        edit = _intended_edit(intent)
        if intent is None or edit is None or edit.to not in IDENTITY_FILES or edit.to != edit.file:
            return
        if _journalled(self.journal, edit):
            forget(self.home)
            return
        try:
            current = read_entries(self.home, edit.to)
        except FileDamaged:
            return
        if current != edit.before:
            return  # the write stands (journalled by _detect) or the owner changed the file
        appended = self._appended(intent)
        if appended is not None and appended != "none":
            rollback.cut_back(self.home.memory_file("notes.md"), intent["notes_at"])
            log.info(
                "notes.md: the entries a write of %s moved or dropped were appended, but a crash "
                "came before the write; taken back",
                edit.to,
            )
        forget(self.home)

    def _appended(self, intent: dict) -> bool | str | None:
        """Whether notes.md ends with the block the intent names, appended where it says: True
        (whole), False (a start of it: torn), "none" (nothing of it), None (the intent names no
        block, or notes.md cannot be read)."""
        at, block = intent.get("notes_at"), intent.get("block")
        # An offset is an int (not a bool) from 0; any other value names no block: no match.
        if type(at) is not int or at < 0 or not isinstance(block, str) or not block:
            return None
        data = block.encode("utf-8")
        try:
            with open_read(self.home.memory_file("notes.md")) as f:
                # Past the end (however far: seek cannot take every int) nothing was appended.
                size = os.fstat(f.fileno()).st_size
                f.seek(min(at, size))
                tail = f.read(len(data) + 1) if at <= size else b""
        except OSError:
            return None
        if tail == data:
            return True
        if 0 < len(tail) < len(data) and data.startswith(tail):
            return False
        return "none"


# How many of the journal's latest lines of a file are looked through for a write's intent. An
# intent outlives its journal line only when a kill comes between the two, and then every write
# of memoryd's replaces it; until then only hand edits, one line a start at most, come after it.
INTENT_LINES = 64


def _journalled(journal: Journal, edit: Edit) -> bool:
    """Whether one of the journal's latest lines of edit's file is edit (its fields, whatever
    its id, time and recovered mark): the write it is the intent of stood and is journalled."""
    if edit.to is None:
        return False
    fields = edit.dump()
    fields.pop("recovered", None)
    with contextlib.closing(scan.lines_to(journal.month_files(), edit.to)) as lines:
        for n, (_, _, record) in enumerate(lines):
            line = record.dump()
            if all(line.get(k) == v for k, v in fields.items()):
                return True
            if n + 1 >= INTENT_LINES:
                break
    return False


def _intended_edit(intent: dict | None) -> Edit | None:
    """The edit an intent holds, or None when it holds none (a damaged or foreign file)."""
    if intent is None:
        return None
    try:
        return Edit.model_validate(intent["fields"])
    except ValidationError:
        return None


def _is_unjournalled_write(edit: Edit, file: str, last: list[str], current: list[str]) -> bool:
    return edit.to == file and edit.before == last and edit.after == current


def keep_if_owners(home: Home, path: Path) -> Path | None:
    """A temporary file left beside memory.md or user.md by a crash, kept as
    FILE.hand-edit-<time> (logged) when it may hold a save of the owner's that no other place
    holds; the name it is kept under, or None when it is memoryd's own and may be removed."""
    file = next((f for f in IDENTITY_FILES if path.name.startswith(f".{f}.")), None)
    if file is None or not _owners(home, path, file):
        return None
    stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}"
    kept = home.memory_file(f"{file}.hand-edit-{stamp}")
    n = 1
    while os.path.lexists(kept):
        n += 1
        kept = home.memory_file(f"{file}.hand-edit-{stamp}-{n}")
    os.rename(path, kept)
    log.warning(
        "%s: a save left under memoryd's temporary name %s by a crash while memoryd wrote %s "
        "is not what %s or the journal holds; kept here for the owner to merge",
        kept,
        path.name,
        file,
        file,
    )
    return kept


def _owners(home: Home, path: Path, file: str) -> bool:
    """Whether the leftover at path holds what neither file now, nor memoryd's intended write
    (its after, whole or a start of it, or its before), nor the journal's latest edits of file
    (their afters and befores) hold."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except OSError:
        return False  # nothing that can be read there to keep; its removal says what fails
    try:
        data = read_at_most(fd, entries.MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > entries.MAX_BYTES:
        return True  # not memoryd's: it never writes so much
    edit = _intended_edit(read_intent(home))
    if edit is not None and edit.to == file and entries.file_bytes(edit.after).startswith(data):
        return False  # memoryd's own new file, whole or torn by the kill
    try:
        held = entries.parse(entries.decode(data, file))
    except FileDamaged:
        return True
    # What memoryd's own exchange moves out is the file's text before its write: the intent's
    # before, or, once the write is journalled, the before of one of the journal's latest edits
    # of the file (a kill between the journal line and the drop of that copy leaves it).
    known = [] if edit is None or edit.to != file else [edit.after, edit.before]
    with contextlib.suppress(FileDamaged):
        known.append(read_entries(home, file))
    known.extend(_journal_texts(home, file))
    return held not in known


# How many of the journal's latest edits of a file hold the texts a leftover is compared with.
LATEST_EDITS = 3


def _journal_texts(home: Home, file: str) -> list[list[str]]:
    """The afters and befores of the journal's latest edits of file (the last after first);
    the empty file alone when the journal holds none (or cannot be read)."""
    texts: list[list[str]] = []
    try:
        with contextlib.closing(scan.lines_to(Journal(home).month_files(), file)) as lines:
            for _, _, record in lines:
                texts += [list(record.after), list(record.before)]
                if len(texts) >= 2 * LATEST_EDITS:
                    break
    except OSError:
        pass
    return texts or [[]]
