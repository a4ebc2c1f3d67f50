"""The writes that land in notes.md (spec 3, 4): a session's note, an add routed to notes (an
untrusted session's, or one above [index] max_class), and the entries an edit moves out of
memory.md or user.md.

notes.md is only appended to: a note's intent is noted first, then its block appended, then its
journal line, so that a kill between the append and the line has the line appended at the next
start (handedit.py), and an OSError cuts the append back. A write to a notes.md that is missing
is refused (memorygone.py): a new notes.md holding it alone would hide every note before it.

Why a module of its own: store.py replaces memory.md and user.md whole; this is the other file,
which the memory tool, an edit's removals and the owner's import (importrun.py) all append to.
"""

import datetime as dt
import errno
import logging
import os
from collections.abc import Callable
from typing import Protocol

from memoryd.errors import WriteFailed
from memoryd.home import Home, append_bytes
from memoryd.journal import rollback
from memoryd.journal.byfile import JournalIndex
from memoryd.journal.journal import Edit, EditLine, Journal, NoteLine, ends_without_newline
from memoryd.memory import edits, memorygone, notes, writeintent
from memoryd.memory.failedwrite import Unmarked
from memoryd.trust import classrule
from memoryd.trust.caller import Caller
from proto.tools import AddArgs, NoteArgs

# The store's logger: these lines are the store's writes, and keep its name.
log = logging.getLogger("memoryd.memory.store")

NOTED = "noted"
NOTED_UNTRUSTED = "noted (untrusted)"


class NoteStore(Protocol):
    """What these writes use of the store (memory/store.py), which calls them with itself."""

    home: Home
    journal: Journal
    now: Callable[[], dt.datetime]
    unmarked: Unmarked

    def not_applied(
        self, file: str, action: str, session: str | None, e: OSError
    ) -> WriteFailed: ...


def note(store: NoteStore, args: NoteArgs | AddArgs, file: str | None, caller: Caller) -> str:
    """Append a session's note (or its add routed to notes, file naming where it was asked to
    go) and journal it: the answer, or the write's failure."""
    memorygone.notes_there(store.home, args.action, caller.session)
    text = edits.new_note(args.text)
    when = store.now()
    klass = classrule.session_class(caller.taint)
    untrusted = caller.untrusted
    session = caller.session
    edit = Edit(
        **caller.head(),
        action=args.action,
        file=file,
        to="notes.md",
        before=[],
        after=[text],
        notes=[NoteLine(kind="noted", text=text)],
    )
    try:
        record = append_note(store, notes.noted(text, when, session, klass, untrusted), when, edit)
    except OSError as e:
        raise store.not_applied("notes.md", args.action, session, e) from None
    log.info("notes.md: %s by session %s (edit %s)", args.action, session, record.id)
    return NOTED_UNTRUSTED if untrusted else NOTED


def append_note(store: NoteStore, block: str, when: dt.datetime, edit: Edit) -> EditLine:
    """Append a note's block to notes.md and journal it; an OSError takes the append back.
    Its intent is noted first, so that a kill between the append and its journal line has
    the line appended at the next start (handedit.py), as for memory.md and user.md."""
    path = store.home.memory_file("notes.md")
    if not os.path.lexists(path):
        # Appending would make a new notes.md that hides the notes it held (memorygone.py).
        raise FileNotFoundError(
            errno.ENOENT, "notes.md is missing (runbook: memory-unavailable)", str(path)
        )
    size = rollback.size_of(path)
    written = ("\n" if ends_without_newline(path) else "") + block  # as append_notes does
    try:
        # The id first: once the note is appended, only the journal's append can fail.
        record = store.journal.line(when, edit)
        writeintent.intend(store.home, edit.dump(), notes=(size or 0, written))
        append_notes(store.home, block)
        record = store.journal.append(when, record)
    except OSError as e:
        # Logged when it cannot run: the cause is the answer, with what the file may hold.
        if not rollback.take_back(path, size):
            store.unmarked.left_in_place(edit.dump(), (size or 0, written))
            raise rollback.NotTakenBack(path, rollback.first_cause(e)) from None
        writeintent.forget(store.home)
        raise rollback.first_cause(e) from None
    writeintent.forget(store.home)
    return record


def append_notes(home: Home, text: str) -> None:
    path = home.memory_file("notes.md")
    prefix = "\n" if ends_without_newline(path) else ""
    append_bytes(path, (prefix + text).encode("utf-8"))


def removal_text(
    journal_index: JournalIndex,
    plan: edits.Plan,
    when: dt.datetime,
    session: str | None,
    taint: object | None = None,
) -> str:
    """The notes.md entries of what leaves the file, each with its writer's class, or the
    session's (taint: a session's edit) when that is higher (classrule.note_class)."""
    texts = [r.text for r in plan.removals]
    classes = classrule.entry_classes(journal_index, plan.file, texts)
    return "".join(
        notes.moved_or_dropped(
            r.kind, r.text, when, plan.file, session, classrule.note_class(classes[r.text], taint)
        )
        for r in plan.removals
    )
