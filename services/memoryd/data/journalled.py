"""What a journal records of the write that put a text where it is: the label memoryd gave it.

A file the owner hands memoryd (an export to import, an archive to restore) claims a label for
each text: the export's provenance, the archive's notes.md headers. The journal that comes with
it (this home's for an import, the archive's own for a restore) records what memoryd itself gave
that text when it was written: the writing session's untrusted flag and class (an import line's
"imported", the label the text came in with), and for a note moved or dropped out of memory.md or
user.md the class the entry came into that file with (classrule). A claim is never allowed to be
laxer than that record: importclaim.py and notesclaim.py make it as strict, and say so.

A write is named by its edit id and its text: an id alone names another edit in another home
(every home counts from 0001 each day), but an edit that wrote this very text is the write.
"""

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from memoryd.journal import scan
from memoryd.journal.idform import EDIT_ID
from memoryd.journal.journal import IDENTITY_FILES, EditLine, class_source
from memoryd.trust import classrule
from proto.labels import CLASS_RANK, higher_class, is_class
from proto.trim import trim

NOTED = "noted"


@dataclass(frozen=True)
class Label:
    """How a write labelled a text: kind (entry, noted, moved, dropped), class, untrusted."""

    kind: str
    klass: str
    untrusted: bool

    def laxer_than(self, other: "Label") -> bool:
        """True when other is stricter in anything: untrusted, a higher class, or a note where
        this is an entry moved or dropped out of identity (recalled as identity)."""
        return (
            (other.untrusted and not self.untrusted)
            or CLASS_RANK[other.klass] > CLASS_RANK[self.klass]
            or (other.kind == NOTED and self.kind in ("moved", "dropped"))
        )

    def with_(self, other: "Label") -> "Label":
        """The stricter of the two in each part; a note stays a note, an untrusted text is
        only ever a noted note (notes.md cannot say untrusted of a moved entry)."""
        untrusted = self.untrusted or other.untrusted
        kind = self.kind
        if kind in ("moved", "dropped") and (untrusted or other.kind == NOTED):
            kind = NOTED
        return Label(kind, higher_class(self.klass, other.klass), untrusted)


@dataclass(frozen=True)
class Written:
    """The journal's record of one write of a text: its edit, session and label."""

    edit: str
    session: str | None
    label: Label


def klass_of(source: object) -> str:
    """The class a journal value gives (a line's taint, an import's class): none is the owner's,
    private; a value that is no class (a hand edit) the highest, never shown by mistake."""
    if source is None:
        return classrule.FLOOR
    return classrule.session_class(source) if is_class(source) else classrule.HIGHEST


def line_label(record: EditLine, kind: str) -> tuple[str | None, Label]:
    """The session and label a line gave what it wrote as kind (entry or noted): an import's the
    label the text came with (its line is the owner's), any other the writing session's."""
    imported = record.imported if record.action == "import" else None
    if isinstance(imported, dict):
        claimed = imported.get("class")
        klass = claimed if is_class(claimed) else classrule.HIGHEST
        untrusted = record.untrusted or imported.get("untrusted") is not False
        session = imported.get("session")
        return (session if isinstance(session, str) else "owner"), Label(kind, klass, untrusted)
    source = class_source(record) if kind == "entry" else record.taint
    return record.session, Label(kind, klass_of(source), bool(record.untrusted))


def _key(edit: str) -> tuple[str, int] | None:
    m = EDIT_ID.match(edit)
    return (m.group(1), int(m.group(2))) if m else None


def came_in_before(months: list[Path], file: str, text: str, edit: str) -> str | None:
    """The class text came into file with, by the last line before edit that brought it in
    (None when no line did: nothing to check a claim against)."""
    before = _key(edit)
    with closing(scan.lines_to(months, file)) as lines:
        for _, _, record in lines:
            here = _key(record.id)
            if before is None or here is None or here >= before or record.action == "undo":
                continue
            if text in record.after and text not in record.before:
                return klass_of(class_source(record))
    return None


def writes(record: EditLine, text: str, months: list[Path]) -> Iterator[Written]:
    """What record wrote of text: an entry it brought into memory.md or user.md, a note it
    appended; a moved or dropped entry's class from the line that brought it into its file."""
    text = trim(text)
    if record.to in IDENTITY_FILES and record.action != "undo":
        after = {trim(e) for e in record.after} - {trim(e) for e in record.before}
        if text in after:
            session, label = line_label(record, "entry")
            yield Written(record.id, session, label)
    for note in record.notes:
        if trim(note.text) != text:
            continue
        if note.kind == NOTED:
            session, label = line_label(record, NOTED)
            yield Written(record.id, session, label)
        elif note.kind in ("moved", "dropped"):
            file = record.to if record.to in IDENTITY_FILES else record.file
            found = came_in_before(months, file, text, record.id) if file else None
            if found is not None:
                yield Written(record.id, record.session, Label(note.kind, found, False))


def strictest(found: list[Written]) -> Written | None:
    """Of the records of one write, the strictest (a line that both moved and noted a text)."""
    out = None
    for written in found:
        if out is None or out.label.laxer_than(written.label):
            out = written
    return out


def describe(label: Label, other: Label) -> str:
    """The parts of label in which it and other differ, as said to the owner."""
    parts = []
    if label.klass != other.klass:
        parts.append(label.klass)
    if label.untrusted != other.untrusted:
        parts.append("untrusted" if label.untrusted else "trusted")
    if not parts and label.kind != other.kind:
        parts.append("a noted note" if label.kind == NOTED else f"{label.kind} from identity")
    return " and ".join(parts) or label.klass


def because(claimed: Label, written: Written, whose: str) -> str:
    """Why a claim was made stricter, to follow "its provenance" or "its header": "claims
    trusted, but this home's journal records edit E of session S as untrusted" (whose: "this
    home's", "the archive's")."""
    by = f" of session {written.session}" if written.session else ""
    return (
        f"claims {describe(claimed, written.label)}, but {whose} journal records edit "
        f"{written.edit}{by} as {describe(written.label, claimed)}"
    )
