"""What a write to memory/ that failed answers, and what it leaves to be done (spec 4).

A write that failed is taken back (rollback.py) and answered "not applied", naming the file left
unchanged. When the take-back failed too, the file may hold the change: the answer says where
(untaken.py), and the write's intent stays, marked so that the start or write that finds the
change journals it as not taken back, never as the write answered applied; while the disk refuses
the mark too, it waits here for the next write.

Why a module of its own: store.py decides how a write goes; this is only what is said and kept
when it did not go, shared by the memory tool's writes, the notes' (notewrites.py) and the
owner's (ownerwrites.py, imports).
"""

import logging
from pathlib import Path

from memoryd.errors import WriteFailed, WriteNotTakenBack
from memoryd.home import Home
from memoryd.journal import rollback
from memoryd.memory import edits, untaken, writeintent
from proto.files import NotRegular

# The store's logger: these lines are the store's writes, and keep its name.
log = logging.getLogger("memoryd.memory.store")


def not_applied(file: str, action: str, session: str | None, e: OSError) -> WriteFailed:
    """The answer to a write that failed and was taken back (logged); to one whose take-back
    failed too (NotTakenBack), that the file it names may hold the change."""
    cause = rollback.first_cause(e)
    reason = str(cause) if isinstance(cause, NotRegular) else cause.strerror or str(cause)
    who = session or "the owner"
    if isinstance(e, rollback.NotTakenBack) and e.path.name in untaken.TAKEN_BACK:
        where = e.path.name
        log.error(
            "%s: %s by %s not applied, and not taken back: %s; %s may hold it",
            file,
            action,
            who,
            reason,
            e.path,
        )
        return WriteNotTakenBack(untaken.sentence(reason, where))
    log.error("%s: %s by %s not applied: %s", file, action, who, reason)
    return WriteFailed(
        f"not applied: memoryd cannot write its memory files ({reason}); {file} is unchanged"
    )


class Unmarked:
    """The intent of a write that could not be taken back, still to be marked so (its fields,
    and its notes.md append): the disk that refused the take-back refused the mark."""

    def __init__(self, home: Home):
        self.home = home
        self.waiting: tuple[dict, tuple[int, str] | None] | None = None

    def mark(self) -> None:
        """Mark the waiting intent, so that the start or write that finds its change journals it
        as not taken back, never as the write answered applied. Left for the next write while
        the disk refuses it; dropped once the intent on disk is another's or gone (journalled,
        or the owner's)."""
        if self.waiting is None:
            return
        fields, notes_at = self.waiting
        intent = writeintent.read_intent(self.home)
        if intent is None or intent.get("fields") != fields:
            self.waiting = None
            return
        try:
            untaken.write_mark(self.home, fields, notes_at)
        except OSError as e:
            path = writeintent.intent_path(self.home)
            log.error("%s: cannot be marked as not taken back yet: %s", path, e.strerror or e)
            return
        self.waiting = None

    def left_in_place(self, fields: dict, notes_at: tuple[int, str] | None) -> None:
        """A write that failed stands in its file, its take-back failed: its intent stays, to be
        marked so (mark)."""
        self.waiting = (fields, notes_at)
        self.mark()


def given_up(
    unmarked: Unmarked,
    plan: edits.Plan,
    planned_from: list[str],
    fields: dict,
    removal: tuple[int, str] | None,
    notes_size: int | None,
    e: OSError,
) -> OSError:
    """Take back what a failed write left, and say what could not be: the error to answer
    with, a NotTakenBack naming the file that may hold the change when one does. A file
    that still holds the write keeps the entries it moved to notes.md with it."""
    home = unmarked.home
    path = home.memory_file(plan.file)
    notes_path = home.memory_file("notes.md")
    cause = rollback.first_cause(e)
    taken = not (isinstance(e, rollback.NotTakenBack) and e.path == path)
    if not taken or (plan.after != tuple(planned_from) and untaken.holds_now(path, plan.after)):
        unmarked.left_in_place(fields, removal)
        return rollback.NotTakenBack(path, cause)
    if not rollback.take_back(notes_path, notes_size):
        # Its intent stays: the next start or write finds the file as it was before, and
        # cuts the entries back (handedit.py).
        return rollback.NotTakenBack(notes_path, cause)
    writeintent.forget(home)
    return cause


def take_back_notes(home: Home, notes_path: Path, notes_size: int | None) -> None:
    """Undo what a write that did not stand appended (logged when it cannot), and drop its
    intent, so a failure is answered with its own cause."""
    rollback.take_back(notes_path, notes_size)
    writeintent.forget(home)
