"""The owner's commands on the memory files: log, undo, pending, accept, reject (spec 5).

A part of MemoryStore (its base class), kept apart so that store.py holds the model's calls and
the write sequence. Undo and accept write through MemoryStore._apply, under the store's lock; an
edit staged by a session that could not edit identity now (untrusted, or above [index] max_class)
is refused at accept.
"""

import datetime as dt
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from memoryd.errors import AdminRefused, EditRefused, FileDamaged, WriteFailed
from memoryd.home import Home
from memoryd.journal.journal import EditLine, Journal
from memoryd.memory import edits, undo
from memoryd.memory.entries import FILE_OF_ARG
from memoryd.memory.memfiles import read_entries
from memoryd.memory.review import PendingLine, Review, args_of
from memoryd.owner import admin_text
from memoryd.trust import classrule
from memoryd.trust.caller import UNDO, Caller
from proto.labels import CLASS_RANK

log = logging.getLogger(__name__)


class OwnerCommands:
    # What MemoryStore (store.py) sets and defines, declared for the type checker.
    home: Home
    journal: Journal
    review: Review
    review_on: bool
    max_class: str
    now: Callable[[], dt.datetime]
    _lock: threading.Lock

    if TYPE_CHECKING:

        def detect_hand_edits(self) -> None: ...

        def _entries_for_edit(self, file: str) -> list[str]: ...

        @staticmethod
        def _not_applied(
            file: str, action: str, session: str | None, e: OSError
        ) -> WriteFailed: ...

        def _apply(
            self, plan: edits.Plan, caller: Caller, action: str, extra: dict | None = None
        ) -> EditLine: ...

    # --- the owner's commands ---------------------------------------------------------------
    def log(self, n: int = 10) -> str:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise AdminRefused("refused: N must be a whole number, 1 or more")
        return admin_text.log_text(self.journal.tail(n))

    def undo(self, edit_id: str) -> str:
        with self._lock:
            self.detect_hand_edits()
            record = undo.undoable(self.journal, edit_id)
            file = cast(str, record.to)  # undo.undoable found memory.md or user.md there
            try:
                current = read_entries(self.home, file)
            except FileDamaged as e:
                raise AdminRefused(f"refused: {e}; undo would overwrite it") from None
            undo.check_unchanged(record, current)
            plan = edits.Plan("undo", file, tuple(current), tuple(record.before))
            new = self._apply(plan, UNDO, "undo", {"undoes": edit_id})
            return undo.undone_sentence(edit_id, new.id, file, plan.length)

    def pending(self) -> str:
        return admin_text.pending_text(self.review.items(), self.review_on)

    def accept(self, pending_id: str) -> str:
        with self._lock:
            self.detect_hand_edits()
            item = self.review.get(pending_id)
            self._check_stager(item)
            args = args_of(item)
            file = FILE_OF_ARG[args.file]
            try:
                plan = edits.plan(args, self._entries_for_edit(file))
            except EditRefused as e:
                reason = str(e).removeprefix("refused: ")
                raise AdminRefused(
                    f"refused: {pending_id} cannot be applied to {file} as it is now: {reason}"
                ) from None
            stager = Caller(item.session, item.call, item.taint, False)
            record = self._apply(
                plan, stager, "accept", {"pending": pending_id, "requested": args.action}
            )
            self.review.discard(pending_id)
            return f"accepted {pending_id} as edit {record.id}: " + edits.updated_sentence(
                file, plan.length
            )

    def _check_stager(self, item: PendingLine) -> None:
        """Refuse an item staged by a session that could not edit identity now."""
        taint = item.taint
        if item.untrusted is not False:
            reason = "had read untrusted content"
        elif not isinstance(taint, str) or taint not in CLASS_RANK:
            reason = "has no valid taint on record"
        elif classrule.above(taint, self.max_class):
            reason = f"had read {taint} content, above what memory may hold ({self.max_class})"
        else:
            return
        raise AdminRefused(classrule.accept_refused_sentence(item.id, reason))

    def reject(self, pending_id: str) -> str:
        with self._lock:
            item = self.review.get(pending_id)
            file = item.file
            try:
                record = self._journal_reject(item, pending_id, file)
            except OSError as e:
                raise self._not_applied(str(file), "reject", None, e) from None
            self.review.discard(pending_id)
            log.info("%s: %s rejected by the owner (edit %s)", file, pending_id, record.id)
            return f"rejected {pending_id} (edit {record.id}); {file} is unchanged"

    def _journal_reject(self, item: PendingLine, pending_id: str, file: object) -> EditLine:
        return self.journal.append(
            self.now(),
            {
                "session": item.session,
                "call": item.call,
                "untrusted": False,
                "action": "reject",
                "file": file,
                "to": None,
                "before": [],
                "after": [],
                "notes": [],
                "pending": pending_id,
                "requested": item.action,
            },
        )
