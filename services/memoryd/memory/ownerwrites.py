"""The owner's writes to memory.md and user.md that name an edit: undo, accept, reject (spec 5).

Each runs under the store's write lock, after the store has journalled any hand edit, and writes
through MemoryStore.apply like a session's edit, so the crash-safe order and the rollback are the
same. The id each names is looked up first, before that hand edit is journalled: the id stands for
what it named when the owner read it, never for an edit this call journals under it. An edit
staged by a session that could not edit identity now (untrusted, or above [index] max_class) is
refused at accept. They live beside the store, not with the owner's other commands (owner/),
because they are part of how memory/ changes: the store calls them, the owner's dispatch only
reaches them through the store.

While a forget that stopped part way stands (owner/datalock.py), undo and accept are refused as
restore and import are: the journal's older lines and pending writes may still hold the text it
takes, and an undo writing an edit's "before" back, or an accept of a staged add, would put that
text into the file every prompt holds. reject, which writes no text, runs as before.
"""

import datetime as dt
import logging
import threading
from collections.abc import Callable
from typing import Protocol, cast

from memoryd.errors import AdminRefused, EditRefused, FileDamaged, WriteFailed
from memoryd.home import Home
from memoryd.journal.byfile import JournalIndex
from memoryd.journal.journal import Edit, EditLine, Journal
from memoryd.memory import edits, undo
from memoryd.memory.entries import FILE_OF_ARG
from memoryd.memory.memfiles import read_entries
from memoryd.memory.pendingline import PendingLine
from memoryd.memory.review import Review, args_of
from memoryd.owner.datalock import refuse_while_forget_stopped
from memoryd.trust import classrule
from memoryd.trust.caller import UNDO, Caller
from proto.labels import CLASS_RANK

log = logging.getLogger(__name__)


class MemoryStore(Protocol):
    """What these writes use of the store (memory/store.py), which calls them with itself."""

    home: Home
    journal: Journal
    journal_index: JournalIndex
    review: Review
    max_class: str
    now: Callable[[], dt.datetime]
    lock: threading.Lock

    def detect_hand_edits(self) -> None: ...

    def entries_for_edit(self, file: str) -> list[str]: ...

    def not_applied(
        self, file: str, action: str, session: str | None, e: OSError
    ) -> WriteFailed: ...

    def apply(
        self, plan: edits.Plan, caller: Caller, action: str, extra: dict | None = None
    ) -> EditLine: ...


def undo_edit(store: MemoryStore, edit_id: str) -> str:
    """Revert edit_id, the latest edit of its file, while the file holds what it left."""
    with store.lock:
        record = undo.find(store.journal, edit_id)
        refuse_while_forget_stopped(store.home, "undone")
        store.detect_hand_edits()
        undo.check(store.journal_index, record)
        file = cast(str, record.to)  # undo.check found memory.md or user.md there
        try:
            current = read_entries(store.home, file)
        except FileDamaged as e:
            raise AdminRefused(f"refused: {e}; undo would overwrite it") from None
        undo.check_unchanged(record, current)
        plan = edits.Plan("undo", file, tuple(current), tuple(record.before))
        undo.check_limit(edit_id, plan)
        new = store.apply(plan, UNDO, "undo", {"undoes": edit_id})
        return undo.undone_sentence(edit_id, new.id, file, plan.length)


def accept(store: MemoryStore, pending_id: str) -> str:
    """Apply a staged edit to its file as it is now, as an edit of the session that staged it."""
    with store.lock:
        item = store.review.get(pending_id)
        refuse_while_forget_stopped(store.home, "accepted")
        store.detect_hand_edits()
        check_stager(item, store.max_class)
        args = args_of(item)
        file = FILE_OF_ARG[args.file]
        try:
            plan = edits.plan(args, store.entries_for_edit(file))
        except EditRefused as e:
            reason = str(e).removeprefix("refused: ")
            raise AdminRefused(
                f"refused: {pending_id} cannot be applied to {file} as it is now: {reason}"
            ) from None
        stager = Caller(item.session, item.call, item.taint, False)
        record = store.apply(
            plan, stager, "accept", {"pending": pending_id, "requested": args.action}
        )
        store.review.discard(pending_id)
        return f"accepted {pending_id} as edit {record.id}: " + edits.updated_sentence(
            file, plan.length
        )


def check_stager(item: PendingLine, max_class: str) -> None:
    """Refuse an item staged by a session that could not edit identity now."""
    taint = item.taint
    if item.untrusted is not False:
        reason = "had read untrusted content"
    elif not isinstance(taint, str) or taint not in CLASS_RANK:
        reason = "has no valid taint on record"
    elif classrule.above(taint, max_class):
        reason = f"had read {taint} content, above what memory may hold ({max_class})"
    else:
        return
    raise AdminRefused(classrule.accept_refused_sentence(item.id, reason))


def reject(store: MemoryStore, pending_id: str) -> str:
    """Drop a staged edit: journalled (so its id is resolved), its file unchanged."""
    with store.lock:
        item = store.review.get(pending_id)
        file = item.file
        try:
            record = _journal_reject(store, item, pending_id)
        except OSError as e:
            raise store.not_applied(str(file), "reject", None, e) from None
        store.review.discard(pending_id)
        log.info("%s: %s rejected by the owner (edit %s)", file, pending_id, record.id)
        return f"rejected {pending_id} (edit {record.id}); {file} is unchanged"


def _journal_reject(store: MemoryStore, item: PendingLine, pending_id: str) -> EditLine:
    edit = Edit(
        session=item.session,
        call=item.call,
        untrusted=False,
        action="reject",
        file=item.file,
        to=None,
        before=[],
        after=[],
        notes=[],
        pending=pending_id,
        requested=item.action,
    )
    return store.journal.append(store.now(), edit)
