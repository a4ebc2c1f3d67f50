"""Hand edits: memory.md or user.md changed outside memoryd, journalled as `hand-edit`.

The journal's last `after` for a file is what memoryd left in it. When the file's entries differ
from it at start or before a write, someone edited the file by hand: the change is journalled as
an edit with action `hand-edit`, session `owner`, its before (the journal's last after) and after
(the file now), so `bxctl memory show` explains it and undo can revert it like any edit.

A crash between the rename of a memoryd write and its journal append leaves the same picture, and
must not be called a hand edit. So before each rename memoryd writes the journal fields it is about
to append to memory/.writing.json (writeintent.py; one write, no fsync: it only has to survive a
killed process, not a power cut). If the file now holds exactly that intent's after, and the
journal's last after is its before, the write was memoryd's: its journal line is appended as it
would have been, with `"recovered": true`, and the intent is dropped: once a write is journalled, a
later look at a file the owner put back by hand must never take it for a write still to be
journalled, or for one that never happened. A power cut in that window can still show up as a hand
edit; that is the one case left, and the record still holds the right before and after.

The same picture is left by a write whose journal line a power cut tore, or whose line was lost
with its month file: the entries it brought in would be journalled as the owner's, private, and a
secret session's entry would reach every prompt once max_class is below secret. So when the journal
after the file's latest line is not whole (handclass.py), the hand edit is journalled with its
class unknown ("carried": "unknown", read as the highest), and the log line says why and how the
owner keeps such an entry as his own.

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
memory.md.hand-edit-<time>, logged, for the owner to merge (leftover.py).

The journal's last after per file comes from the journal's index by file (journal/byfile.py),
which reads only what was appended since it last looked, so a write costs the same however long
the journal is.
"""

import logging
import os
from pathlib import Path

from memoryd.errors import EditRefused, FileDamaged
from memoryd.home import Home, open_read
from memoryd.journal import months, rollback
from memoryd.journal.byfile import JournalIndex
from memoryd.journal.journal import IDENTITY_FILES, Edit, EditLine, Journal, utc
from memoryd.memory import handclass, writeintent
from memoryd.memory.memfiles import read_entries
from proto.plural import counted

log = logging.getLogger(__name__)
# The action of a write's intent marked as failed and not taken back (memory/untaken.py).
NOT_TAKEN_BACK = "not-taken-back"

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
        intended = writeintent.intended_edit(writeintent.read_intent(self.home))
        if (
            intended is not None
            and _is_unjournalled_write(intended, file, last, current)
            and not writeintent.journalled(self.journal, intended)
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
            writeintent.forget(self.home)
            log.info("%s: %s; journalled now as edit %s", file, said, record.id)
            return record
        # Entries a damaged or lost line may have brought in are not taken for the owner's.
        unknown = self._not_whole(file, last, current)
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
        if unknown is not None:
            edit = edit.model_copy(update={"carried": handclass.UNKNOWN})
        record = self._journal(file, "edited outside memoryd: a hand edit", edit)
        said = (
            ""
            if unknown is None
            else "; "
            + handclass.hand_edit_sentence(file, unknown, handclass.brought_in(last, current))
        )
        log.info(
            "%s: edited outside memoryd (%s before, %s now); journalled as edit %s%s",
            file,
            counted(len(last), "entry", "entries"),
            f"{len(current):,}",
            record.id,
            said,
        )
        return record

    def _not_whole(
        self, file: str, last: list[str], current: list[str]
    ) -> handclass.NotWhole | None:
        """Why the entries this hand edit brings in may be a write of memoryd's whose line is
        damaged or lost (handclass.py), or None: they are the owner's. The journal unreadable
        leaves the hand edit unjournalled (Unjournalled), tried again at the next write."""
        if not handclass.brought_in(last, current):
            return None
        try:
            latest = self.index.latest(file)
            return handclass.why_not_whole(
                self.journal, file, None if latest is None else latest.id
            )
        except OSError as e:
            what = "edited outside memoryd: a hand edit"
            raise Unjournalled(file, what, self.home.edits, e) from None

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
        intent = writeintent.read_intent(self.home)
        edit = writeintent.intended_edit(intent)
        if intent is None or edit is None or edit.to != "notes.md":
            return None
        appended = self._appended(intent)
        if appended is None:
            return None
        if appended is not True or writeintent.journalled(self.journal, edit):
            if appended is False:  # torn by the kill: cut
                rollback.cut_back(self.home.memory_file("notes.md"), intent["notes_at"])
                log.info("notes.md: a note's append torn by a crash was taken back")
            writeintent.forget(self.home)
            return None
        edit.recovered = True
        record = self._journal("notes.md", "memoryd's note appended before a crash", edit)
        writeintent.forget(self.home)
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
        intent = writeintent.read_intent(self.home)
        edit = writeintent.intended_edit(intent)
        if intent is None or edit is None or edit.to not in IDENTITY_FILES or edit.to != edit.file:
            return
        if writeintent.journalled(self.journal, edit):
            writeintent.forget(self.home)
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
        writeintent.forget(self.home)

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


def _is_unjournalled_write(edit: Edit, file: str, last: list[str], current: list[str]) -> bool:
    return edit.to == file and edit.before == last and edit.after == current
