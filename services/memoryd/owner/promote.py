"""bxctl memory promote REF --file memory|user: the owner moves a note into a file.

REF is note:N (the reference search and stats print: the Nth entry of notes.md, from 0) or a
note's exact text. note:N is taken only while it names the note the owner's last search showed
(data/targets.py check_shown, as forget takes it): notes.md may have been edited by hand since.
The note goes through the same plan as an add (the check, the entry rules, the limit), and is
journalled as the owner's edit (session "owner", action "promote", with the note it came from),
so undo reverts it like any edit. notes.md is append-only: the note stays there too.

A note keeps its class: one above [index] max_class (written by a session that had read more than
memory may hold, so recall never shows it) is refused, naming its class, rather than promoted
into identity, which every prompt holds. A note of a class above private that memory may hold is
promoted with its class on the journal line (note.class), so the entry leaves the file again, by
a later move, with that class and not as the owner's private (trust/classrule.py).
"""

import re
from collections.abc import Iterable

from memoryd.data import notestream, targets
from memoryd.errors import AdminRefused, EditRefused
from memoryd.home import open_read
from memoryd.journal import forgottenmarker
from memoryd.memory import edits, notes
from memoryd.memory.entries import FILE_OF_ARG
from memoryd.owner import paging
from memoryd.owner.args import PromoteArg
from memoryd.owner.datalock import refuse_while_forget_stopped
from memoryd.trust import classrule
from memoryd.trust.caller import OWNER
from proto.tools import AddArgs
from proto.trim import trim

NOTE_REF = re.compile(r"^note:([0-9]{1,9})\Z")


def find_note(all_notes: Iterable[notes.NoteEntry], ref: str) -> notes.NoteEntry:
    """The note ref names (note:N, or a note's exact text: the last that reads so), the notes
    given one at a time: notes.md has no limit, and is never held whole."""
    m = NOTE_REF.match(ref)
    if m is not None:
        number = int(m.group(1))
        held = 0
        for note in all_notes:
            if note.number == number:
                return note
            held += 1
        raise AdminRefused(f"refused: notes.md holds no note {ref} (it holds {held:,})")
    text = trim(ref)
    found = None
    for note in all_notes:
        if note.text == text:
            found = note
    if found is not None:
        return found
    raise AdminRefused(
        f'refused: no note of notes.md reads exactly "{edits.shorten(text)}"; '
        "name it by the reference search prints (note:N)"
    )


def run(store, index, arg: PromoteArg) -> str:
    """On the writer; index is the service's, which tells whether a note:N the owner gives is
    still the note search showed (notes.md may have been edited by hand since)."""
    # While a forget that stopped part way stands, notes.md may still hold the text it takes
    # (it was stopped before it marked the note), and a promote would put it into every prompt.
    refuse_while_forget_stopped(store.home, "promoted")
    path = store.home.memory_file("notes.md")
    try:
        # Never through a link, never waiting on a FIFO: the writer thread reads it, and every
        # memory write of every session waits behind it. A note at a time (notestream.py).
        with open_read(path) as f:
            note = find_note(notestream.entries(notestream.file_chunks(f)), arg.ref)
    except FileNotFoundError:
        note = find_note([], arg.ref)
    except OSError as e:
        why = e.strerror or str(e)
        raise AdminRefused(f"refused: cannot read {path}: {why}; nothing was promoted") from None
    file = FILE_OF_ARG[arg.file]
    ref = f"note:{note.number}"
    if NOTE_REF.match(arg.ref):
        # A number search printed before a hand edit of notes.md may name another note now,
        # which would go into every prompt: refused as forget refuses it. (A note named by its
        # exact text is that text wherever it stands.)
        targets.check_shown(index, ref, note.text, doing="promote")
    if forgottenmarker.is_marker(note.text):
        # Its text was forgotten: only the marker stands there, which must not become identity.
        # (A note key of forgotten.jsonl names a number, which after a hand edit of notes.md may
        # be another note's, never forgotten: the marker is what tells.)
        raise AdminRefused(
            f"refused: {ref} was forgotten by the owner; there is nothing to promote"
        )
    if classrule.above(note.klass, store.max_class):
        raise AdminRefused(classrule.promote_refused_sentence(ref, note.klass, store.max_class))

    def decide(current: list[str]) -> edits.Plan:
        try:
            plan = edits.plan(AddArgs(action="add", file=arg.file, text=note.text), current)
        except EditRefused as e:
            reason = str(e).removeprefix("refused: ")
            raise AdminRefused(f"refused: {ref} cannot go into {file}: {reason}") from None
        return edits.Plan("promote", file, plan.before, plan.after)

    came_from: dict = {"ref": ref, "session": note.session, "untrusted": note.untrusted}
    klass = classrule.session_class(note.klass)
    if klass != classrule.FLOOR:  # as in notes.md's headers, a class only when above private
        came_from["class"] = klass
    record = store.owner_edit(file, decide, OWNER, "promote", {"note": came_from})
    length = edits.entries.length(record.after)
    sentence = f"promoted {ref} into {file} as edit {record.id}: " + edits.updated_sentence(
        file, length
    )
    if note.untrusted:
        sentence += (
            f" (the note was written by session {note.session} after it read untrusted content)"
        )
    if arg.json_:
        return paging.dumps(
            {
                "edit": record.id,
                "ref": ref,
                "file": file,
                "entry": note.text,
                "length": length,
                "message": sentence,
            }
        )
    return sentence
