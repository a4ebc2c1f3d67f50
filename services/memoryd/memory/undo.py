"""Which edit bxctl memory undo may revert (spec 5, Undo), and the sentences saying why not.

Only the latest edit of a file (undo and accept count as edits of it), and only while the file
holds exactly what that edit left, so an undo never overwrites a later change. A note, or an add
that became a note, went to notes.md, which is append-only: it cannot be undone. A rejected
pending edit changed nothing.

The id is looked up (find) before the store journals a hand edit it finds (check then sees that
hand edit as the file's latest edit): the owner names the edit an id named when it was listed, so a
hand edit journalled in the same call, under the next id, is never what an undo of that id reverts.
"""

from memoryd.errors import AdminRefused
from memoryd.journal import forgottenmarker, twice
from memoryd.journal.byfile import JournalIndex
from memoryd.journal.idform import EDIT_ID
from memoryd.journal.journal import IDENTITY_FILES, EditLine, Journal
from memoryd.memory.edits import Plan, limit_sentence
from memoryd.memory.entries import LIMITS, count


def find(journal: Journal, edit_id: object) -> EditLine:
    """The journal line of edit_id as the journal holds it now; AdminRefused when it holds none,
    or holds it on more than one line (twice.py: the line checked as the file's latest must be
    the very edit the owner saw under the id). The months are searched, never parsed whole."""
    if not isinstance(edit_id, str) or not EDIT_ID.match(edit_id):
        shown = str(edit_id)[:64]
        raise AdminRefused(f"refused: {shown!r} is not an edit id (YYYY-MM-DD-NNNN)")
    return twice.one_line(journal, edit_id)


def check(index: JournalIndex, record: EditLine) -> None:
    """AdminRefused unless record (found by find) is the latest edit of its file, found by the
    journal's index."""
    edit_id = record.id
    if record.action == "forget":
        raise AdminRefused(
            f"refused: edit {edit_id} is the owner's forget; forgetting cannot be undone, since "
            "the text it removed is no longer held anywhere"
        )
    if record.action == "restore":
        restored = record.restored if isinstance(record.restored, dict) else {}
        replaced = restored.get("replaced")
        # Going back is another restore: what was written since leaves the files with it.
        back = (
            f"what it replaced is in backups/{replaced}: bxctl memory restore --replace that "
            "archive brings it back, and takes every entry and note written since the restore out "
            "of the files (kept only in the -replaced archive that restore makes)"
            if isinstance(replaced, str) and replaced
            else "the home held no memory before it"
        )
        raise AdminRefused(
            f"refused: edit {edit_id} is a restore, which replaced the whole memory at once; it "
            f"cannot be undone as an edit; {back} (runbook: restore-from-a-backup)"
        )
    if any(forgottenmarker.is_marker(e) for e in (*record.before, *record.after)):
        raise AdminRefused(
            f"refused: undoing edit {edit_id} would need text the owner has since made memoryd "
            "forget; that text is no longer held anywhere"
        )
    if record.action == "reject":
        raise AdminRefused(f"refused: edit {edit_id} rejected a pending edit; nothing changed")
    if record.to == "notes.md":
        raise AdminRefused(
            f"refused: edit {edit_id} went to notes.md, which is append-only; it cannot be undone"
        )
    if record.to not in IDENTITY_FILES:
        raise AdminRefused(f"refused: the journal line of edit {edit_id} is damaged")
    latest = index.latest(record.to)
    if latest is not None and latest.id != edit_id:
        raise AdminRefused(
            f"refused: edit {edit_id} is not the latest edit of {record.to} "
            f"(the latest is {latest.id}); only the latest edit of a file can be undone"
        )


def check_unchanged(record: EditLine, current: list[str]) -> None:
    """AdminRefused unless the file's entries are exactly what the edit left."""
    if current != record.after:
        raise AdminRefused(
            f"refused: {record.to} has changed since edit {record.id} (by hand, or by a "
            "write the journal does not hold); undo would overwrite that change"
        )


def check_limit(edit_id: str, plan: Plan) -> None:
    """AdminRefused when the entries the undo brings back are over the file's limit (a file
    edited by hand over it, then brought under by the edit undone): as every other edit, it is
    refused with spec 5's sentence, since a file over its limit lets no session start. Refused
    too when the file is over its limit already: the owner mends it (bxctl memory edit), and an
    undo never leaves it so while answering that all is well."""
    if plan.length > LIMITS[plan.file]:
        raise AdminRefused(
            f"refused: edit {edit_id} cannot be undone: {limit_sentence(plan.file, plan.length)}"
        )


def undone_sentence(edit_id: str, new_id: str, file: str, length: int) -> str:
    return (
        f"undid {edit_id} as edit {new_id}: {file} holds its entries from before that edit again "
        f"({count(length)} of {count(LIMITS[file])} characters); "
        "it takes effect in the next session"
    )
