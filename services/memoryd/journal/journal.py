"""The edit journal, edits/YYYY-MM.jsonl (spec 3): one JSON line per applied edit, appended to
its clock's month file or, when the clock is behind the journal's end, to the newest (months.py).

A line holds id (YYYY-MM-DD-NNNN, NNNN counting from 0001 within the day, worked out from the
journal itself and the last id handed out, below), time (UTC, to the second), session, call,
action, file (the file the call named, or null for a note), to (where the entries went: memory.md,
user.md or notes.md; null for a rejected pending edit, which changed nothing), before and after
(the entries, raw), untrusted, and notes (what the edit appended to notes.md: [{"kind", "text"}]).
Undo adds "undoes", accept and reject add "pending" and "requested" (the action that waited). A
restore adds a line of its own, action "restore", naming no file: "restored" says which archive
replaced the memory and which backup holds what it replaced (data/lay.py).

A writer builds its edit as an Edit (the model below), which refuses a key it does not know, so a
misspelt one fails the write instead of being journalled; the journal adds the id and the time and
appends it. Each line reads back as an EditLine, validated as it is read (linefile.py), keeping a
key a later memoryd may have written. The journal is read without reading a month whole through
scan.py (a line by id, the last lines, a file's last line) and byfile.py (each identity file's
latest edit and its entries' classes). It is the history notes.md alone cannot give, and what undo
reverts from. A line that is not valid JSON or not an edit line (a hand edit, a crash mid-append)
is skipped with a log line naming the file, the line and why (damaged.py: at start for a month's
last line, the one a power cut tears, and when log, show or undo meet one); undo stays safe
because it also compares the file with what the edit left. The id a damaged line starts with is
never handed out again.

An id names one edit for good: the owner reads it in bxctl memory log and undoes, shows or accepts
by it later. The journal alone cannot promise that once its lines are gone (edits/ deleted or
replaced while memoryd runs, or while it is stopped): counting on from what is left would hand out
an id again, and an undo of the id the owner was shown would revert another edit. So the last edit
id and pending id handed out are kept beside it too (Issued, memory/.ids.json, and a copy in
index/ that outlives memory/ removed whole), ids go on after them, and an id memoryd handed out
whose line is gone is refused as such (missing_sentence).
"""

import datetime as dt
import errno
import json
import logging
import os
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from memoryd.home import (
    Home,
    append_bytes,
    ensure_dir,
    fsync_dir,
    open_read,
)
from memoryd.journal import damaged, heldids, idcopies, lostbefore, months
from memoryd.journal.idform import EDIT_ID, NUMBER_MOST, day_numbers, order
from memoryd.journal.ids import Issued
from memoryd.journal.linefile import line_id, raw_lines, read_lines
from memoryd.journal.rollback import append_or_cut_back
from proto.labels import CLASS_RANK, higher_class

log = logging.getLogger(__name__)

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
IDENTITY_FILES = ("memory.md", "user.md")


def utc(when: dt.datetime) -> dt.datetime:
    return when.astimezone(dt.UTC)


def record_time(when: dt.datetime) -> str:
    return utc(when).strftime(TIME_FORMAT)


class NoteLine(BaseModel):
    """What an edit appended to notes.md: kind noted, moved or dropped, and the entry."""

    model_config = ConfigDict(extra="allow", strict=True)
    kind: str
    text: str


class Edit(BaseModel):
    """An edit as its writer builds it, before the journal gives it an id and a time. Keys are
    fields of this model and nothing else (a misspelt one is refused, never journalled). Fields in
    the order memoryd writes them; an edit holds only the fields its writer set (a reject has no
    taint), so dump() gives the same bytes as before the model existed."""

    model_config = ConfigDict(extra="forbid", strict=True)
    session: str | None = None
    call: str | None = None
    taint: str | None = None
    untrusted: bool = False
    action: str | None = None
    file: str | None = None
    to: str | None = None
    before: list[str] = []
    after: list[str] = []
    notes: list[NoteLine] = []
    undoes: str | None = None  # undo
    pending: str | None = None  # accept, reject
    requested: str | None = None  # accept, reject: the action that waited
    note: dict | None = None  # promote: the note it came from
    recovered: bool | None = None  # a write journalled after a crash (memory/handedit.py)
    # forget: {"id", "at", "keys", "digests"} of what the owner forgot, and "pending": the ids of
    # the staged writes it dropped, [] for none (forgotpending.py)
    forgot: dict | None = None
    imported: dict | None = None  # import: the provenance the entry came with
    restored: dict | None = None  # restore: {"archive", "made", "by", "replaced"} (lay.py)
    # A session's rewrite: the class of the entries it took out, when above its taint; what the
    # line brought in carries it (classrule.carried, class_source)
    carried: str | None = None

    def dump(self) -> dict:
        return self.model_dump(mode="json", exclude_unset=True)


def edit_id(value: str) -> str:
    """value, when it is an edit id (idform.EDIT_ID); a line whose id is none (a hand edit, a
    number past nine digits) is damaged, said and passed over as any other damage is."""
    if not EDIT_ID.match(value):
        raise ValueError("not an edit id (YYYY-MM-DD-NNNN)")
    return value


class EditLine(Edit):
    """One line of edits/YYYY-MM.jsonl as read back: the edit with its id and time first. Keys
    this model does not know (a line a later memoryd wrote) are kept as read, not refused."""

    model_config = ConfigDict(extra="allow", strict=True)
    id: Annotated[str, AfterValidator(edit_id)]
    time: str | None = None

    def dump(self) -> dict:
        fields = self.model_dump(mode="json", exclude_unset=True)
        head = {key: fields.pop(key) for key in ("id", "time") if key in fields}
        return {**head, **fields}


def class_source(record: EditLine) -> str | None:
    """What decides the class of the entries a line brought into a file: the promoted note's own
    class where the promote recorded it, the higher of the writing session's taint and the class
    its rewrite carried over, or the taint alone (None for the owner's edits, which are
    private)."""
    if record.action == "promote" and isinstance(record.note, dict):
        klass = record.note.get("class")
        if isinstance(klass, str):
            return klass
    if record.action == "import" and isinstance(record.imported, dict):
        # The class the item was exported with: an import is the owner's act, but what it
        # brought in holds what the exporting home's session wrote.
        klass = record.imported.get("class")
        return klass if isinstance(klass, str) else "?"
    if record.carried is not None:
        # A rewrite never lowers a class; a value that is no class reads as none ("?": highest).
        taint = record.taint
        if record.carried not in CLASS_RANK or (taint is not None and taint not in CLASS_RANK):
            return "?"
        return record.carried if taint is None else higher_class(record.carried, taint)
    return record.taint


def ends_without_newline(path: Path) -> bool:
    """True when path has bytes and the last is not a newline (a hand edit, a torn append)."""
    try:
        with open_read(path) as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except FileNotFoundError:
        return False


def append_record(path: Path, record: dict) -> None:
    """Append one JSON line, fsync'd, starting on a line of its own even after a torn write."""
    ensure_dir(path.parent)
    new = not os.path.lexists(path)
    prefix = b"\n" if ends_without_newline(path) else b""
    line = json.dumps(record, ensure_ascii=False).encode("utf-8")
    append_bytes(path, prefix + line + b"\n")
    if new:
        fsync_dir(path.parent)


TAIL_BYTES = 65_536


def last_id(path: Path) -> str | None:
    """The id of the last journal line of path that has one, read from the file's tail."""
    try:
        with open_read(path) as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read()
    except FileNotFoundError:
        return None
    for raw in reversed(data.split(b"\n")):
        if not raw.strip():
            continue
        edit_id = _id_of(raw)
        if edit_id is not None:
            return edit_id
    if size > TAIL_BYTES:
        # The tail holds no id (a long last line, a run of NUL bytes): the month a block of
        # whole lines at a time, only the last id kept.
        last = None
        for _, raw, _ in raw_lines(path):
            found = line_id(raw)
            if found is not None and EDIT_ID.match(found):
                last = found
        return last
    return None


def _id_of(raw: bytes) -> str | None:
    # A line torn or damaged after its start still names the id it was given: never given again.
    edit_id = line_id(raw) or damaged.id_at_start(raw)
    return edit_id if edit_id is not None and EDIT_ID.match(edit_id) else None


class Journal:
    def __init__(self, home: Home, restoring: bool = False):
        """restoring: the staged journal of a restore (lay.py, leftout.py), whose lines go on
        after the ids the home handed out (Issued.carry_to). That it holds none of the home's
        later edits is the restore's doing, which its own line names, so next_id does not warn
        of them: the warning would name files of the staging folder, gone once it is laid."""
        self.home = home
        self.issued = Issued(home)
        self._ends = damaged.Ends()
        self.restoring = restoring

    def month_files(self) -> list[Path]:
        return [self.home.edits / name for name in months.names(self.home.edits)]

    def _damaged(self, edit_id: str) -> damaged.Damaged | None:
        """The damaged line that starts with edit_id, in whichever month file may hold it."""
        for path in months.from_month(self.month_files(), edit_id):
            found = damaged.find(path, edit_id, EditLine)
            if found is not None:
                return found
        return None

    def check_end(self) -> list[damaged.Damaged]:
        """The month files' last lines that are damaged (the one a power cut tears during its
        append), each said in memoryd's log once: at start, before the journal is compared with
        the files, and before each write for the months changed since they were last checked
        (damaged.Ends), so a write does not read every month there has ever been."""
        return self._ends.check(self.month_files(), EditLine)

    def records(self) -> list[EditLine]:
        """Every journal line, oldest first: the whole journal parsed, for tests and tools that
        check it whole; memoryd's own reads go through scan.py and byfile.py."""
        out: list[EditLine] = []
        for path in self.month_files():
            out.extend(read_lines(path, EditLine))
        return out

    def next_id(self, when: dt.datetime) -> str:
        """The next id of the day, after every id of the day any journal line holds and after the
        last one handed out here (Issued). The journal's ids are kept per month file and read on
        only as far as the months grew (heldids.py), so a write costs the same however long the
        journal is. Not the appended file's last line alone: after the clock went back over a
        month's end and came forward, the newest file ends on a line of the day before while lines
        of this day are above it, and .ids.json (not carried by a backup, and not fsync'd) may not
        say so; nor only the day's own month file on, as a concatenation may put a line anywhere."""
        day = f"{utc(when):%Y-%m-%d}"
        path = months.append_path(self.home, utc(when))
        held = heldids.held(self.home.edits).top(day)
        last = last_id(path)  # a line the owner wrote otherwise, if it ends the file
        held = max([held, *day_numbers([last] if last else [], day)])
        issued = self.issued.number("edit", day)
        if issued > held:
            # Counting on from the journal would hand out an id the owner was already shown
            # for another edit.
            lost = f"{day}-{issued:04d}"
            found = self._damaged(lost)
            if found is not None:
                log.warning(
                    "%s: edit %s's line (line %s) is damaged: %s; ids go on after it",
                    found.path,
                    lost,
                    f"{found.number:,}",
                    found.why if found.torn else f"it is {found.why}",
                )
            elif not self.restoring:
                source = self.issued.source("edit", day)
                log.warning(
                    "%s: the journal no longer holds edit %s, the last memoryd handed out "
                    "according to %s (its line was deleted, replaced or restored from an older "
                    "copy%s); ids go on after it",
                    path,
                    lost,
                    idcopies.named_by(source),
                    idcopies.damaged_too(source),
                )
        # An id past nine digits would read as no id (idform.NUMBER) and be handed out again.
        if held >= NUMBER_MOST:
            raise OSError(
                errno.EOVERFLOW,
                f"the journal holds edit {day}-{NUMBER_MOST}, the last id a day can have; "
                "no edit can be journalled until tomorrow (a line edited by hand?)",
            )
        if issued >= NUMBER_MOST:
            # Said as the copy that gave it: the journal holds no such line.
            source = self.issued.source("edit", day)
            raise OSError(
                errno.EOVERFLOW,
                f"according to {idcopies.named_by(source)}, memoryd handed out edit "
                f"{day}-{issued}, the last id a day can have (the journal holds "
                f"{f'none past {day}-{held:04d}' if held else 'none of that day'}); no edit can "
                "be journalled until tomorrow"
                f"{idcopies.refusal_hint(source)}",
            )
        return f"{day}-{max(held, issued) + 1:04d}"

    def missing_sentence(self, edit_id: str) -> str:
        """The owner's refusal for an edit id the journal holds no line of that parses: a damaged
        line of it is named (file and line), one memoryd handed out and has since lost is said to
        be gone, never that it did not exist."""
        if EDIT_ID.match(edit_id):
            try:
                found = self._damaged(edit_id)
            except OSError:
                found = None
            if found is not None and found.torn:
                return (
                    f"refused: edit {edit_id}'s line in {found.path} (line {found.number:,}) is "
                    f"damaged: it was {damaged.TORN}, so memoryd can neither show nor undo it; "
                    "the write it journalled stands in the files: delete that line (memoryd's log "
                    f"names it), nothing else needs mending {damaged.RUNBOOK}"
                )
            if found is not None:
                return (
                    f"refused: edit {edit_id}'s line in {found.path} (line {found.number:,}) is "
                    "damaged: it does not parse, so memoryd can neither show nor undo it "
                    "(memoryd's log says what is wrong with it); "
                    f"{damaged.mend_from_backup(found.path)} "
                    f"{damaged.RUNBOOK}"
                )
        if self.issued.handed_out("edit", edit_id):
            floor = self._floor_alone(edit_id)
            if floor is not None:
                return (
                    f"refused: the journal holds no edit {edit_id}: according to "
                    f"{idcopies.named_by(floor)}, memoryd journalled it (or {floor.name} is "
                    "damaged), and its line has left edits/ since (deleted or replaced); bxctl "
                    "memory log lists the edits it holds (runbook: journal-lost)"
                )
            return (
                f"refused: the journal no longer holds edit {edit_id}: memoryd journalled it, "
                "but its line has left edits/ since (deleted or replaced); bxctl memory log "
                "lists the edits it holds (runbook: journal-lost)"
            )
        if EDIT_ID.match(edit_id):
            lost = lostbefore.refused_as_lost(self.month_files(), self.issued, edit_id)
            if lost is not None:
                return f"refused: the journal holds no edit {edit_id}; {lost}"
        return f"refused: the journal holds no edit {edit_id}"

    def _floor_alone(self, edit_id: str) -> Path | None:
        """The floor's path when only it gives edit_id as handed out: its number lies in a range
        only the floor gave (Issued.floor_only) and no line of that range above it vouches for
        it (ids count on, so a line of a later number of the range would)."""
        day, number = order(edit_id)
        for low, high in self.issued.floor_only("edit", day):
            if low < number <= high:
                held = heldids.held(self.home.edits)
                return None if held.any_in(day, number, high) else self.issued.floor
        return None

    def line(self, when: dt.datetime, edit: Edit) -> EditLine:
        """The line one edit made at when is journalled as, with its new id and time. A writer
        works it out before it renames a file into place (store.py), so that what can fail in
        reading the journal's ids fails while the write can still be refused whole; after the
        rename only the append is left, and an OSError there is taken back."""
        return EditLine.model_validate(
            {"id": self.next_id(when), "time": record_time(when), **edit.dump()}
        )

    def append(self, when: dt.datetime, edit: Edit) -> EditLine:
        """Journal one edit made at when; returns its line, with its new id and time. An
        EditLine is the one line(when, ...) made, appended as it is: no other line was journalled
        since (the writer holds the store's lock from one to the other)."""
        record = edit if isinstance(edit, EditLine) else self.line(when, edit)
        path = months.append_path(self.home, utc(when))
        # A line torn by a full disk is cut back, so the journal ends on a whole line.
        append_or_cut_back(path, lambda: append_record(path, record.dump()))
        self.issued.note("edit", record.id)
        return record
