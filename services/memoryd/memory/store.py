"""MemoryStore: memoryd's {home}/memory/, the one place that changes it (spec 3, 4, 5).

The server calls call, undo, accept and reject from one writer thread (and a lock here serialises
them anyway), and block from any thread. Every edit reads its file from disk as it is now, since
the owner may have edited it, and plans the change with edits.py before touching anything: a
refused call changes no file. An applied edit writes in the order that loses nothing on a crash:
entries leaving the file reach notes.md (fsync) first, then the new file is renamed into place
(fsync, rename, fsync the folder), then the journal line is appended. The rename happens only
if the file still holds what the edit was planned from and the journal explains it: a hand edit
saved meanwhile is journalled and the edit planned again from it (memfiles.replace_unchanged,
handedit.py), so no hand edit is replaced unseen and the journal's chain holds.

Routing by the session's state: note goes to notes.md in any session. A clean session edits
memory.md and user.md (or stages the edit when review is on); in a session that has read untrusted
content an add becomes an untrusted note, and replace, remove and consolidate are refused. A
session whose taint is above [index] max_class is routed the same way (classrule.py), and its
staged edits cannot be accepted. The session's state is the stricter of what the caller says and
what its own log shows (witness.py), when the store has a witness.

Beside it: the writes that land in notes.md (notewrites.py), what a failed write answers and
leaves to be marked (failedwrite.py), what the start makes (startfiles.py), and the owner's
writes that name an edit (ownerwrites.py).
"""

import datetime as dt
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from memoryd.errors import (
    BlockRefused,
    FileDamaged,
    FileInvalid,
    MalformedCall,
    UntrustedSession,
)
from memoryd.home import Home, append_bytes, tighten_files
from memoryd.journal import rollback
from memoryd.journal.byfile import JournalIndex
from memoryd.journal.journal import Edit, EditLine, Journal, NoteLine, ends_without_newline
from memoryd.memory import (
    block,
    check,
    edits,
    entries,
    failedwrite,
    handedit,
    memorygone,
    notewrites,
    ownerwrites,
    startfiles,
    tornintent,
    writeintent,
)
from memoryd.memory.block import Classes as BlockClasses
from memoryd.memory.entries import FILE_OF_ARG
from memoryd.memory.filesgate import FilesGate
from memoryd.memory.handedit import ChangedByHand
from memoryd.memory.memfiles import Changed, holds, read_entries, replace_unchanged
from memoryd.memory.review import Review, waiting_sentence
from memoryd.trust import classrule
from memoryd.trust.caller import Caller
from memoryd.trust.witness import Witness
from proto.labels import CLASS_RANK
from proto.tools import AddArgs, MemoryArgs, NoteArgs

log = logging.getLogger(__name__)

UNTRUSTED_ADD = (
    "saved as a note (untrusted): this session has read untrusted content. It is remembered and "
    "recall finds it; it never reaches the prompt on its own."
)


def untrusted_sentence(file: str) -> str:
    return f"this session has read untrusted content; it can take notes but not change {file}."


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


JOURNAL_INDEX = "journal-index.json"
# How often an edit is planned again when its file keeps being edited by hand under it; the owner
# saving five times within one write is not an editor's pace, and the call is then refused.
PLAN_TRIES = 5


class MemoryStore:
    def __init__(
        self,
        home: Home,
        *,
        soul_starter: Path | None,
        review: bool = False,
        now: Callable[[], dt.datetime] = utc_now,
        max_class: str = "private",
        witness: Witness | None = None,
    ):
        if max_class not in CLASS_RANK:
            raise ValueError(f"not a data class: {max_class!r}")
        self.home = home
        self.max_class = max_class
        self.witness = witness
        self.soul_starter = Path(soul_starter) if soul_starter is not None else None
        self.review_on = review
        self.now = now
        self.journal = Journal(home)
        self.journal_index = JournalIndex(self.journal, home.index_dir / JOURNAL_INDEX)
        self.review = Review(home, self.journal_index)
        self.hand_edits = handedit.HandEdits(home, self.journal, self.journal_index, now)
        # Every write to memory/ holds it (the writer thread serialises them anyway).
        self.lock = threading.Lock()
        # Held while memory.md or user.md may hold what is yet to stand (filesgate.py).
        self.files_gate = FilesGate(home.memory)
        self.unmarked = failedwrite.Unmarked(home)

    # --- start and read ---------------------------------------------------------------------
    def ensure(self) -> list[Path]:
        """Create memory/ and its files where missing (startfiles.py), make every file of
        memoryd's 0600 (home.tighten_files: the start runs this before it opens the index),
        then journal what was edited by hand while memoryd was stopped: what was created."""
        created = startfiles.ensure(self.home, self.soul_starter)
        tighten_files(self.home)
        self.detect_hand_edits()
        self.review.say_lost()
        return created

    def detect_hand_edits(self) -> None:
        """Journal memory.md or user.md changed outside memoryd (memory/handedit.py), after
        removing a write intent a kill tore (tornintent.py): at start and before each write."""
        self.unmarked.mark()
        tornintent.drop_torn(self.home)
        try:
            self.hand_edits.detect()
        except handedit.Unjournalled as e:  # names the file and the journal month itself
            log.warning("%s", e)
        except OSError as e:
            where = e.filename or self.home.memory
            log.warning("%s: a hand edit cannot be journalled now: %s", where, e.strerror or e)

    def block(self) -> str:
        with self.files_gate.reading():
            return block.build(self.home, self.block_classes())

    def block_classes(self) -> BlockClasses:
        """What the block leaves out by class: entries above max_class, found by the journal's
        index."""
        return BlockClasses(self.max_class, self.journal_index.came_with)

    # --- the memory tool --------------------------------------------------------------------
    def call(self, args: MemoryArgs, caller: Caller) -> str:
        """Apply one memory call; the answer sentence, or EditRefused with the refusal."""
        session, taint, untrusted = caller.session, caller.taint, caller.untrusted
        if session is None or taint is None:
            # Only the owner's callers (caller.py OWNER, UNDO) lack them, and they never get here.
            raise MalformedCall("refused: malformed call: a memory call names a session and taint")
        if self.witness is not None:
            taint, untrusted = self.witness.stricter(session, taint, untrusted)
            caller = caller.stricter(taint, untrusted)
        with self.lock:
            self.detect_hand_edits()
            if isinstance(args, NoteArgs):
                return notewrites.note(self, args, None, caller)
            file = FILE_OF_ARG[args.file]
            over = classrule.above(taint, self.max_class)
            if untrusted or over:
                if isinstance(args, AddArgs):
                    notewrites.note(self, args, file, caller)
                    if over:
                        return classrule.class_add_sentence(taint, self.max_class)
                    return UNTRUSTED_ADD
                if untrusted:
                    raise UntrustedSession(untrusted_sentence(file))
                raise UntrustedSession(
                    classrule.class_refused_sentence(taint, self.max_class, file)
                )
            if self.review_on:
                current = self.entries_for_edit(file)
                edits.plan(args, current, self.unseen(file, current))
                try:
                    item = self.review.stage(self.now(), caller, args, file)
                except OSError as e:
                    raise self.not_applied(file, args.action, caller.session, e) from None
                log.info(
                    "%s: %s by session %s staged as %s", file, args.action, caller.session, item.id
                )
                return waiting_sentence(file, item.id)
            plan, _ = self.replanned(
                file, lambda now: edits.plan(args, now, self.unseen(file, now)), caller, args.action
            )
            return edits.updated_sentence(file, plan.length)

    def unseen(self, file: str, current: list[str]) -> frozenset[str]:
        """The entries of file a session's block leaves out (a class above max_class, the
        check): not the session's to name or be told of (edits.plan)."""
        try:
            above = self.block_classes().above(self.home, file, current)
        except BlockRefused as e:
            raise FileInvalid(f"refused: {file} cannot be edited now: {e}") from None
        return frozenset(e for e in current if e in above or check.problem(e) is not None)

    def replanned(
        self,
        file: str,
        decide: Callable[[list[str]], edits.Plan],
        caller: Caller,
        action: str,
        extra: dict | None = None,
        *,
        skip_same: bool = False,
    ) -> tuple[edits.Plan, EditLine | None]:
        """Plan an edit of file from its entries as they are now (decide) and apply it, planning
        again while a hand edit lands under it (apply journals it each time): the plan applied
        and its journal line (None for a plan that changes nothing, when skip_same). The
        caller holds self.lock."""
        tries = 0
        while True:
            current = self.entries_for_edit(file)
            plan = decide(current)
            if skip_same and plan.after == plan.before:
                return plan, None
            try:
                return plan, self.apply(plan, caller, action, extra, read_from=current)
            except ChangedByHand:
                tries += 1
                if tries >= PLAN_TRIES:
                    raise

    def entries_for_edit(self, file: str) -> list[str]:
        """The entries of file as they are now; FileInvalid when it cannot be parsed."""
        try:
            return read_entries(self.home, file)
        except FileDamaged as e:
            raise FileInvalid(f"refused: {e}; the owner must fix it before it can be edited") from e

    not_applied = staticmethod(failedwrite.not_applied)

    def append_note(self, block: str, when: dt.datetime, edit: Edit) -> EditLine:
        return notewrites.append_note(self, block, when, edit)

    def apply(
        self,
        plan: edits.Plan,
        caller: Caller,
        action: str,
        extra: dict | None = None,
        *,
        read_from: list[str] | None = None,
    ) -> EditLine:
        """Write an edit in the crash-safe order; its journal line. The caller holds self.lock.
        A step that fails takes the steps before it back (rollback.py) and the edit is answered
        as not applied. When the file was edited by hand since plan was read from it (the file
        or the journal's last after no longer read_from, the entries plan was made from; its
        before unless given, as a forget's before holds a marker in place of the text), nothing
        is left applied, the hand edit is journalled and ChangedByHand raised: the caller plans
        again. extra: the fields an owner's edit adds to its line (undoes, pending and
        requested, note), checked as the line's own."""
        when = self.now()
        session = caller.session
        path = self.home.memory_file(plan.file)
        notes_path = self.home.memory_file("notes.md")
        # A session's rewrite never lowers a class (classrule.carried); the owner's edits carry
        # nothing over.
        taint = caller.taint if session is not None else None
        try:
            carried = None
            if taint is not None:
                carried = classrule.carried(
                    self.journal_index, plan.file, plan.before, plan.after, taint
                )
        except OSError as e:
            raise self.not_applied(plan.file, action, session, e) from None
        if carried is not None:
            extra = {**(extra or {}), "carried": carried}
        # Built before anything is written: a line the model refuses leaves every file as it was.
        line = _journal_edit(plan, caller, action, extra or {})
        if plan.removals:
            memorygone.notes_there(self.home, action, session)
        planned_from = list(plan.before) if read_from is None else read_from
        notes_size = rollback.size_of(notes_path)
        old = None
        removal = None
        try:
            if self.journal_index.last_after(plan.file) != planned_from:
                # Read after a hand edit the journal does not hold yet: journal it first.
                self._changed_by_hand(plan.file, action, session)
            # The line's id is worked out before anything is written: once the file is renamed
            # into place only the append is left, which an OSError takes back.
            planned = self.journal.line(when, line)
            # The intent comes first and names the removals' append, so that a kill before the
            # rename has them cut back at the next start (handedit.py).
            if plan.removals:
                prefix = "\n" if ends_without_newline(notes_path) else ""
                text = notewrites.removal_text(self.journal_index, plan, when, session, taint)
                removal = (notes_size or 0, prefix + text)
            writeintent.intend(self.home, line.dump(), notes=removal)
            if removal is not None:
                append_bytes(notes_path, removal[1].encode("utf-8"))
            with self.files_gate.changing():
                replaced = replace_unchanged(path, entries.file_bytes(plan.after), planned_from)
                if not isinstance(replaced, Changed):
                    old = replaced
                    try:
                        record = self.journal.append(when, planned)
                    except OSError as e:
                        # A save that replaced the write since is the owner's, and stays
                        # (journalled as a hand edit at the next write); only the write itself
                        # is taken back.
                        if holds(path, plan.after):
                            back = rollback.put_back(old, path)
                            old = None
                            if not back:
                                raise rollback.NotTakenBack(path, e) from None
                        raise rollback.first_cause(e) from None
            if isinstance(replaced, Changed):
                failedwrite.take_back_notes(self.home, notes_path, notes_size)
                self._changed_by_hand(plan.file, action, session)
        except OSError as e:
            failed = failedwrite.given_up(
                self.unmarked, plan, planned_from, line.dump(), removal, notes_size, e
            )
            raise self.not_applied(plan.file, action, session, failed) from None
        finally:
            rollback.drop(old)
        writeintent.forget(self.home)
        who = f"session {session}" if session else "the owner"
        log.info("%s: %s by %s (edit %s)", plan.file, action, who, record.id)
        return record

    def _changed_by_hand(self, file: str, action: str, session: str | None) -> None:
        """Journal the hand edit that came under a write, then give the write up (ChangedByHand,
        or not applied when the hand edit cannot be journalled: the disk's cause)."""
        writeintent.forget(self.home)
        try:
            self.hand_edits.detect()
        except OSError as e:
            raise self.not_applied(file, action, session, e) from None
        log.info("%s: edited by hand while %s was written; it is planned again", file, action)
        raise ChangedByHand(file)

    # --- the owner's edits (owner/) ----------------------------------------------------------
    def owner_edit(
        self,
        file: str,
        decide: Callable[[list[str]], edits.Plan],
        caller: Caller,
        action: str,
        extra: dict | None = None,
    ):
        """An owner's edit of file (promote, edit: owner/): decide plans it from the entries as
        they are now, under the write lock; applied and journalled like any edit. The journal
        line, or None when the plan changes nothing."""
        with self.lock:
            self.detect_hand_edits()
            _, record = self.replanned(file, decide, caller, action, extra, skip_same=True)
            return record

    # --- the owner's writes that name an edit (ownerwrites.py) --------------------------------
    def undo(self, edit_id: str) -> str:
        return ownerwrites.undo_edit(self, edit_id)

    def accept(self, pending_id: str) -> str:
        return ownerwrites.accept(self, pending_id)

    def reject(self, pending_id: str) -> str:
        return ownerwrites.reject(self, pending_id)


def _journal_edit(plan: edits.Plan, caller: Caller, action: str, extra: dict) -> Edit:
    return Edit(
        **caller.head(),
        action=action,
        file=plan.file,
        to=plan.file,
        before=list(plan.before),
        after=list(plan.after),
        notes=[NoteLine(kind=r.kind, text=r.text) for r in plan.removals],
        **extra,
    )
