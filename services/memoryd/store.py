"""MemoryStore: memoryd's {home}/memory/, the one place that changes it (spec 3, 4, 5).

The server calls call, undo, accept and reject from one writer thread (and a lock here serialises
them anyway), and block from any thread. Every edit reads its file from disk as it is now, since
the owner may have edited it, and plans the change with edits.py before touching anything: a
refused call changes no file. An applied edit writes in the order that loses nothing on a crash:
entries leaving the file reach notes.md (fsync) first, then the new file is renamed into place
(atomic_write: fsync, rename, fsync the folder), then the journal line is appended.

Routing by the session's state: note goes to notes.md in any session. A clean session edits
memory.md and user.md (or stages the edit when review is on); in a session that has read untrusted
content an add becomes an untrusted note, and replace, remove and consolidate are refused.
"""

import datetime as dt
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from memoryd import admin_text, block, edits, entries, notes, undo
from memoryd.callargs import check_state, parse_args
from memoryd.entries import FILE_OF_ARG
from memoryd.errors import (
    AdminRefused,
    EditRefused,
    FileDamaged,
    FileInvalid,
    StartFailed,
    UntrustedSession,
)
from memoryd.home import Home, append_bytes, atomic_write, create_if_missing, ensure_dir
from memoryd.journal import Journal, ends_without_newline
from memoryd.memfiles import read_entries
from memoryd.owner import handedit
from memoryd.review import Review, args_of, waiting_sentence
from proto.labels import higher_class
from proto.tools import AddArgs, NoteArgs

log = logging.getLogger(__name__)

NOTED = "noted"
NOTED_UNTRUSTED = "noted (untrusted)"
UNTRUSTED_ADD = (
    "saved as a note (untrusted): this session has read untrusted content. It is remembered and "
    "recall finds it; it never reaches the prompt on its own."
)


def untrusted_sentence(file: str) -> str:
    return f"this session has read untrusted content; it can take notes but not change {file}."


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class MemoryStore:
    def __init__(
        self,
        home: Home,
        *,
        soul_starter: Path | None,
        review: bool = False,
        now: Callable[[], dt.datetime] = utc_now,
    ):
        self.home = home
        self.soul_starter = Path(soul_starter) if soul_starter is not None else None
        self.review_on = review
        self.now = now
        self.journal = Journal(home)
        self.review = Review(home, self.journal)
        self.hand_edits = handedit.HandEdits(home, self.journal, now)
        self._lock = threading.Lock()

    # --- start and read ---------------------------------------------------------------------
    def ensure(self) -> list[Path]:
        """Create memory/ and its files where missing (never overwriting); what was created."""
        created: list[Path] = []
        try:
            for folder in (self.home.memory, self.home.edits, self.home.recalls):
                existed = folder.exists()
                ensure_dir(folder)
                if not existed:
                    created.append(folder)
            soul = self.home.memory_file("soul.md")
            if not soul.exists():
                if self.soul_starter is None:
                    raise StartFailed("soul.md is missing and no [memory] soul_starter is set")
                try:
                    starter = self.soul_starter.read_bytes()
                except OSError as e:
                    raise StartFailed(
                        f"the soul.md starter {self.soul_starter} cannot be read ({e.strerror})"
                    ) from None
                if create_if_missing(soul, starter):
                    created.append(soul)
            for name in ("memory.md", "user.md", "notes.md"):
                path = self.home.memory_file(name)
                if create_if_missing(path, b""):
                    created.append(path)
        except OSError as e:
            where = e.filename or self.home.memory
            raise StartFailed(f"cannot create {where}: {e.strerror}") from e
        for path in created:
            log.info("%s: created", path)
        self.detect_hand_edits()
        return created

    def detect_hand_edits(self) -> None:
        """Journal memory.md or user.md changed outside memoryd (owner/handedit.py)."""
        try:
            self.hand_edits.detect()
        except OSError as e:
            log.warning("%s: a hand edit cannot be journalled now: %s", e.filename, e.strerror)

    def block(self) -> str:
        return block.build(self.home)

    # --- the memory tool --------------------------------------------------------------------
    def call(self, args, *, session: str, call_id: str, taint: str, untrusted: bool) -> str:
        """Apply one memory call; the answer sentence, or EditRefused with the refusal."""
        parsed = parse_args(args)
        check_state(session, call_id, taint, untrusted)
        state = {"session": session, "call": call_id, "taint": taint, "untrusted": untrusted}
        with self._lock:
            self.detect_hand_edits()
            if isinstance(parsed, NoteArgs):
                return self._note(parsed, None, state)
            file = FILE_OF_ARG[parsed.file]
            if untrusted:
                if isinstance(parsed, AddArgs):
                    return self._note(parsed, file, state)
                raise UntrustedSession(untrusted_sentence(file))
            plan = edits.plan(parsed, self._entries_for_edit(file))
            if self.review_on:
                item = self.review.stage(
                    self.now(),
                    {**state, "action": parsed.action, "file": file, "args": _wire(parsed)},
                )
                log.info(
                    "%s: %s by session %s staged as %s", file, parsed.action, session, item["id"]
                )
                return waiting_sentence(file, item["id"])
            self._apply(plan, {**state, "action": parsed.action})
            return edits.updated_sentence(file, plan.length)

    def _entries_for_edit(self, file: str) -> list[str]:
        try:
            return read_entries(self.home, file)
        except FileDamaged as e:
            raise FileInvalid(f"refused: {e}; the owner must fix it before it can be edited") from e

    def _note(self, args: NoteArgs | AddArgs, file: str | None, state: dict) -> str:
        text = edits.new_note(args.text)
        when = self.now()
        klass = higher_class(state["taint"], "private")
        untrusted = state["untrusted"]
        self._append_notes(notes.noted(text, when, state["session"], klass, untrusted))
        record = self.journal.append(
            when,
            {
                **state,
                "action": args.action,
                "file": file,
                "to": "notes.md",
                "before": [],
                "after": [text],
                "notes": [{"kind": "noted", "text": text}],
            },
        )
        session = state["session"]
        log.info("notes.md: %s by session %s (edit %s)", args.action, session, record["id"])
        if file is not None:
            return UNTRUSTED_ADD
        return NOTED_UNTRUSTED if untrusted else NOTED

    def _append_notes(self, text: str) -> None:
        path = self.home.memory_file("notes.md")
        prefix = "\n" if ends_without_newline(path) else ""
        append_bytes(path, (prefix + text).encode("utf-8"))

    def _apply(self, plan: edits.Plan, fields: dict) -> dict:
        """Write an edit in the crash-safe order; its journal line."""
        when = self.now()
        session = fields["session"]
        if plan.removals:
            self._append_notes(
                "".join(
                    notes.moved_or_dropped(r.kind, r.text, when, plan.file, session)
                    for r in plan.removals
                )
            )
        line = {
            "session": session,
            "call": fields["call"],
            "taint": fields.get("taint"),
            "untrusted": fields.get("untrusted", False),
            "action": fields["action"],
            "file": plan.file,
            "to": plan.file,
            "before": list(plan.before),
            "after": list(plan.after),
            "notes": [{"kind": r.kind, "text": r.text} for r in plan.removals],
            **{k: v for k, v in fields.items() if k in ("undoes", "pending", "requested", "note")},
        }
        handedit.intend(self.home, line)
        atomic_write(self.home.memory_file(plan.file), entries.file_bytes(plan.after))
        record = self.journal.append(when, line)
        who = f"session {session}" if session else "the owner"
        log.info("%s: %s by %s (edit %s)", plan.file, fields["action"], who, record["id"])
        return record

    # --- the owner's commands ---------------------------------------------------------------
    def owner_edit(self, file: str, decide: Callable[[list[str]], edits.Plan], fields: dict):
        """An owner's edit of file (promote, edit: owner/): decide plans it from the entries as
        they are now, under the write lock; applied and journalled like any edit. The journal
        line, or None when the plan changes nothing."""
        with self._lock:
            self.detect_hand_edits()
            plan = decide(self._entries_for_edit(file))
            if plan.after == plan.before:
                return None
            return self._apply(plan, fields)

    def log(self, n: int = 10) -> str:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise AdminRefused("refused: N must be a whole number, 1 or more")
        return admin_text.log_text(self.journal.tail(n))

    def undo(self, edit_id: str) -> str:
        with self._lock:
            self.detect_hand_edits()
            record = undo.undoable(self.journal, edit_id)
            file = record["to"]
            try:
                current = read_entries(self.home, file)
            except FileDamaged as e:
                raise AdminRefused(f"refused: {e}; undo would overwrite it") from None
            undo.check_unchanged(record, current)
            plan = edits.Plan("undo", file, tuple(current), tuple(record["before"]))
            new = self._apply(
                plan, {"session": None, "call": None, "action": "undo", "undoes": edit_id}
            )
            return undo.undone_sentence(edit_id, new["id"], file, plan.length)

    def pending(self) -> str:
        return admin_text.pending_text(self.review.items(), self.review_on)

    def accept(self, pending_id: str) -> str:
        with self._lock:
            self.detect_hand_edits()
            item = self.review.get(pending_id)
            args = args_of(item)
            file = FILE_OF_ARG[args.file]
            try:
                plan = edits.plan(args, self._entries_for_edit(file))
            except EditRefused as e:
                reason = str(e).removeprefix("refused: ")
                raise AdminRefused(
                    f"refused: {pending_id} cannot be applied to {file} as it is now: {reason}"
                ) from None
            fields = {k: item.get(k) for k in ("session", "call", "taint")}
            record = self._apply(
                plan,
                {
                    **fields,
                    "action": "accept",
                    "pending": pending_id,
                    "requested": args.action,
                },
            )
            self.review.discard(pending_id)
            return f"accepted {pending_id} as edit {record['id']}: " + edits.updated_sentence(
                file, plan.length
            )

    def reject(self, pending_id: str) -> str:
        with self._lock:
            item = self.review.get(pending_id)
            file = item.get("file")
            record = self.journal.append(
                self.now(),
                {
                    "session": item.get("session"),
                    "call": item.get("call"),
                    "untrusted": False,
                    "action": "reject",
                    "file": file,
                    "to": None,
                    "before": [],
                    "after": [],
                    "notes": [],
                    "pending": pending_id,
                    "requested": item.get("action"),
                },
            )
            self.review.discard(pending_id)
            log.info("%s: %s rejected by the owner (edit %s)", file, pending_id, record["id"])
            return f"rejected {pending_id} (edit {record['id']}); {file} is unchanged"


def _wire(args) -> dict:
    return args.model_dump(mode="json", exclude_none=True)
