"""bxctl memory show ID: one edit whole, its entries before and after as a diff.

The journal line is found through journal/twice.py (the month files mapped, only the line that
starts with the id parsed; refused when more than one line holds the id), so a journal of 100,000
edits answers in well under a second. The diff is
worked out from the line's before and after (pure): entries kept, added, removed, rewritten (a
removed and an added entry in the same place), and moved or dropped ones, which went to notes.md
(the line's notes).

An edit that went to notes.md (a note, or an add by a session that could not change the file it
named) changed no entry of any file: it is shown as the note it became, with the file it named
unchanged and what made it a note (untrusted, a class above private), never as an added entry.
"""

import difflib

from memoryd.errors import AdminRefused
from memoryd.journal import twice
from memoryd.journal.idform import EDIT_ID
from memoryd.journal.journal import EditLine, Journal
from memoryd.owner import paging
from memoryd.owner.admin_text import OWNER, forgot_what, where
from memoryd.trust import classrule
from proto.labels import CLASS_RANK, higher_class

EXTRA_KEYS = ("undoes", "pending", "requested", "note", "recovered", "restored")
NOTES = "notes.md"
ENTRY_FILES = ("memory.md", "user.md")


def find(journal: Journal, edit_id: str) -> EditLine:
    """The journal line of edit_id; AdminRefused when there is none, or more than one."""
    if not EDIT_ID.match(edit_id):
        raise AdminRefused(f"refused: {edit_id[:64]!r} is not an edit id (YYYY-MM-DD-NNNN)")
    # the one line that holds it: with two, which the owner saw under the id cannot be known
    return twice.one_line(journal, edit_id)


def _came_from(provenance: dict) -> str:
    """Where an imported item came from, as its export said: the edit and session of the home
    that wrote it (another home's ids: bxctl memory show here shows this import), what it was
    there (an entry of memory.md or user.md, or a note) and the label it came with, which is what
    made an entry a note here."""
    said = [
        f"{name} {provenance[key]}"
        for key, name in (("edit", "from edit"), ("session", "session"), ("time", "written"))
        if isinstance(provenance.get(key), str)
    ]
    where = ", ".join(said) + " (in the home it was exported from)" if said else "from an export"
    file = provenance.get("file")
    what = [f"an entry of {file} there" if file in ENTRY_FILES else "a note there"]
    klass = provenance.get("class")
    what.append(klass if isinstance(klass, str) else "class not said")
    untrusted = provenance.get("untrusted")
    if isinstance(untrusted, bool):
        what.append("untrusted" if untrusted else "trusted")
    return f"{where}: {', '.join(what)}"


def _why(klass: object, untrusted: object) -> list[str]:
    """What makes a text a note whatever file it named: a class above private, untrusted."""
    why = []
    if (named := classrule.session_class(klass)) != classrule.FLOOR:
        why.append(named)
    if untrusted is True:
        why.append("untrusted")
    return why


def _extras(record: EditLine) -> dict:
    """The keys beyond the common ones a line holds (undoes, pending, requested, note,
    recovered), as written."""
    written = record.model_fields_set
    return {key: getattr(record, key) for key in EXTRA_KEYS if key in written}


def diff(record: EditLine) -> list[dict]:
    """The changes an edit made, in file order: kept, added, removed, rewritten, moved, dropped;
    for an edit that went to notes.md, the notes it appended. Every entry of before and of after
    is in exactly one change (a kept one in one for both)."""
    if record.to == NOTES:
        return [
            {"change": "noted", "entry": note.text, "to": NOTES}
            for note in record.notes
            if note.kind == "noted"
        ]
    before, after = record.before, record.after
    went = _went(record)
    changes: list[dict] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            changes.extend({"change": "kept", "entry": e} for e in before[i1:i2])
        else:
            changes.extend(_replaced(before[i1:i2], after[j1:j2], went))
    return changes


def _went(record: EditLine) -> dict[str, list[str]]:
    """Each text the edit sent to notes.md (moved, dropped), with one kind per note: an entry
    held twice and moved once is said moved once."""
    went: dict[str, list[str]] = {}
    for note in record.notes:
        if note.kind in ("moved", "dropped"):
            went.setdefault(note.text, []).append(note.kind)
    return went


def _replaced(old: list[str], new: list[str], went: dict[str, list[str]]) -> list[dict]:
    """A run of entries that others took the place of, in old's order: those that went to
    notes.md said as such, and only the rest paired by position with new as rewritten (pairing a
    moved entry would hide the new entry it took); what is left of either is removed or added."""
    changes: list[dict] = []
    left = iter(new)
    for entry in old:
        kinds = went.get(entry)
        if kinds:
            changes.append({"change": kinds.pop(0), "entry": entry, "to": NOTES})
        elif (rewritten := next(left, None)) is not None:
            changes.append({"change": "rewritten", "old": entry, "new": rewritten})
        else:
            changes.append({"change": "removed", "entry": entry})
    changes.extend({"change": "added", "entry": e} for e in left)
    return changes


MARK = {"kept": "=", "added": "+", "removed": "-", "moved": "^", "dropped": "x", "noted": "+"}


INDENT = " " * 13


def _entry(text: object) -> str:
    """An entry as shown: cut to ITEM_BYTES, its later lines indented under its first."""
    cut, _ = paging.cut_text(str(text))
    return cut.replace("\n", "\n" + INDENT)


def _as_note(record: EditLine) -> str:
    """The entries line of an edit that went to notes.md: what it changed and why a note. An
    import is the owner's act (its line's own label is the owner's): the why and the file it
    named are those the item was exported with."""
    imported = record.imported if record.action == "import" else None
    if isinstance(imported, dict):
        if isinstance(record.note, dict) and isinstance(record.note.get("was"), dict):
            return _relabelled(record.note, imported)
        why = _why(imported.get("class"), imported.get("untrusted"))
        said = f" ({', '.join(why)}, as exported)" if why else ""
        file = imported.get("file") if imported.get("file") in ENTRY_FILES else None
    else:
        why = _why(record.taint, record.untrusted)
        said = f" ({', '.join(why)})" if why else ""
        file = record.file
    if file is None:
        return f"entries   none changed; a note in notes.md{said}"
    return f"entries   {file} unchanged; saved as a note in notes.md{said}"


def _known_class(value: object, otherwise: str) -> str:
    """value when it is a class name (a journal line may have been edited by hand)."""
    return value if isinstance(value, str) and value in CLASS_RANK else otherwise


def _relabelled(note: dict, imported: dict) -> str:
    """The entries line of an import that gave a note this home held the export's stricter
    label (data/importsame.py): which note, and its label before and after."""
    was = note["was"]
    was_class = _known_class(was.get("class"), classrule.FLOOR)
    new_class = _known_class(imported.get("class"), was_class)
    untrusted = was.get("untrusted") is True or imported.get("untrusted") is True
    now = f"{'untrusted' if untrusted else 'trusted'}, {higher_class(was_class, new_class)}"
    before = f"{'untrusted' if was.get('untrusted') is True else 'trusted'}, {was_class}"
    number = note.get("number")
    which = f"note {number}" if isinstance(number, int) else "a note"
    return (
        f"entries   none changed; {which} of notes.md made {now} (it was {before}): the "
        "export's label is stricter"
    )


def _file(name: str | None) -> str:
    """A file column: a line that names none says so in words."""
    return "none" if name is None else name


def render(record: EditLine, changes: list[dict]) -> str:
    session = record.session or OWNER
    lines = [
        f"edit {record.id}",
        f"time      {record.time}",
        f"session   {session}" + ("  (untrusted)" if record.untrusted else ""),
        f"action    {record.action}",
        f"file      {_file(record.file)}",
        f"to        {_file(record.to)}",
    ]
    if record.action == "forget":  # what it took, by the id given (the line holds no text)
        lines.append(f"forgot    {_took(record)}")
    if record.action == "restore":  # which archive, and where what it replaced went
        lines.append(f"restored  {where(record)}")
    if record.action == "import" and isinstance(record.imported, dict):
        lines.append(f"imported  {_came_from(record.imported)}")
    extras = {k: v for k, v in _extras(record).items() if k != "restored"}
    lines += [f"{key:<9} {value}" for key, value in extras.items()]
    if record.to == NOTES and record.action != "forget":  # a forget marks notes, adds none
        lines.append(_as_note(record))
    else:
        lines.append(f"entries   {len(record.before)} before, {len(record.after)} after")
    kept = sum(1 for c in changes if c["change"] == "kept")
    for c in changes:
        kind = c["change"]
        if kind == "kept":
            continue
        if kind == "rewritten":
            lines.append(f"! rewritten  {_entry(c['old'])}")
            lines.append(f"  now        {_entry(c['new'])}")
        elif kind in ("moved", "dropped", "noted"):
            lines.append(f"{MARK[kind]} {kind:<10} {_entry(c['entry'])}")
            lines.append(f"{INDENT}(to notes.md)")
        else:
            lines.append(f"{MARK[kind]} {kind:<10} {_entry(c['entry'])}")
    if kept:
        lines.append(f"= {kept} entr{'y' if kept == 1 else 'ies'} unchanged")
    if not any(c["change"] != "kept" for c in changes):
        lines.append("(no entry changed)")
    return "\n".join(lines)


def _took(record: EditLine) -> str:
    """What a forget's line says it took, in words."""
    return where(record) if record.file is None else forgot_what(record)


def answer(journal: Journal, edit_id: str, as_json: bool) -> str:
    record = find(journal, edit_id)
    changes = diff(record)
    if as_json:
        keys = ("id", "time", "session", "call", "taint", "untrusted", "action", "file", "to")
        shown = {k: getattr(record, k) for k in keys}
        shown["session"] = record.session or OWNER  # as the text says it
        shown.update(_extras(record))
        if record.action == "forget":
            shown["forgot"] = _took(record)  # the text's forgot line, in the same words
        if record.action == "import" and record.imported is not None:
            shown["imported"] = record.imported  # what the text's imported line says, whole
        shown["before"] = record.before
        shown["after"] = record.after
        shown["changes"] = changes
        return paging.dumps(shown)
    return render(record, changes)
