"""bxctl memory import FILE: an export's items brought in as the owner's journalled edits.

The file (an export in jsonl, handed over in backups/) is read whole and every line checked
before anything is written: a line of the wrong shape refuses the import, naming its number. Then
each item goes through the same rules as any write. An entry from a trusted write at or below
[index] max_class is added to its file (the check, the entry rules, the limit; one journal line
per entry, action "import", with the provenance it came with); an entry marked untrusted or above
max_class becomes a note with its label, never identity; a note is appended to notes.md with its
header (kind, time, session, class, untrusted). An item already there is skipped, and one that
does not fit or fails the check is named with the reason. --dry-run says all that and writes
nothing.
"""

import datetime as dt
import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memoryd.data import exchange, layout
from memoryd.errors import AdminRefused, EditRefused
from memoryd.home import Home, read_file
from memoryd.journal import rollback
from memoryd.journal.journal import Edit
from memoryd.memory import check, edits, entries, notes
from memoryd.memory.memfiles import read_entries
from memoryd.trust import classrule
from memoryd.trust.caller import OWNER
from proto.messages import SESSION_ID_PATTERN, describe
from proto.tools import AddArgs

IMPORT_MAX = 64 << 20
SESSION_ID = re.compile(SESSION_ID_PATTERN)
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?Z$")
FILE_ARG: dict[str, Literal["memory", "user"]] = {"memory.md": "memory", "user.md": "user"}


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    file: Literal["memory.md", "user.md", "notes.md"]
    session: str | None
    edit: str | None
    time: str | None
    klass: Literal["public", "private", "secret"] = Field(alias="class")
    untrusted: bool

    def dump(self) -> dict:
        return {
            "file": self.file,
            "session": self.session,
            "edit": self.edit,
            "time": self.time,
            "class": self.klass,
            "untrusted": self.untrusted,
        }


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    kind: Literal["entry", "note"]
    text: str
    provenance: Provenance
    file: Literal["memory.md", "user.md"] | None = None
    note: Literal["noted", "moved", "dropped"] | None = None
    number: int | None = None
    source: Literal["memory.md", "user.md"] | None = None


def parse(data: bytes) -> list[tuple[int, Item]]:
    """(line number, item) of every item; AdminRefused naming the first bad line."""
    lines = data.split(b"\n")
    try:
        head = json.loads(lines[0])
    except (ValueError, IndexError):
        head = None
    if not isinstance(head, dict) or head.get("format") != exchange.FORMAT:
        raise AdminRefused("refused: line 1 is not the header of a boxmaker memory export")
    version = head.get("version")
    if not isinstance(version, int) or version > exchange.VERSION:
        raise AdminRefused(
            f"refused: the export is format {version!s:.16}; this memoryd reads format "
            f"{exchange.VERSION}"
        )
    out = []
    for number, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        try:
            item = Item.model_validate_json(raw)
        except ValidationError as e:
            raise AdminRefused(
                f"refused: line {number} is not an export item: {describe(e)[:300]}"
            ) from None
        if item.kind == "entry" and item.file is None:
            raise AdminRefused(f"refused: line {number} is an entry without its file")
        if item.kind == "note" and item.note is None:
            raise AdminRefused(f"refused: line {number} is a note without its kind")
        problems = [
            (item.provenance.session is not None and not SESSION_ID.match(item.provenance.session)),
            (item.provenance.time is not None and not TIME.match(item.provenance.time)),
        ]
        if any(problems):
            raise AdminRefused(
                f"refused: line {number} has a provenance session or time of the wrong shape"
            )
        out.append((number, item))
    return out


def _when(text: str | None, now: dt.datetime) -> dt.datetime:
    if text is None:
        return now
    fmt = "%Y-%m-%dT%H:%M:%SZ" if len(text) == 20 else "%Y-%m-%dT%H:%MZ"
    return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC)


class State:
    """The files as the import goes (for --dry-run, and to plan each write against)."""

    def __init__(self, home: Home):
        self.entries = {f: read_entries(home, f) for f in FILE_ARG}
        try:
            found = notes.parse(read_file(home.memory_file("notes.md")))
        except FileNotFoundError:
            found = []
        self.notes = {(n.kind, n.text) for n in found}


def decide(item: Item, state: State, max_class: str) -> tuple[str, str]:
    """(what: add, note or skip, the line said to the owner) for item, updating state."""
    p = item.provenance
    if item.kind == "entry":
        file = item.file or "memory.md"
        if p.untrusted or classrule.above(p.klass, max_class):
            why = "untrusted" if p.untrusted else f"{p.klass}, above {max_class}"
            return _note(item, "noted", state, f"becomes a note ({why}), never identity")
        current = state.entries[file]
        try:
            plan = edits.plan(AddArgs(action="add", file=FILE_ARG[file], text=item.text), current)
        except EditRefused as e:
            reason = str(e).removeprefix("refused: ")
            if item.text.strip() in current:
                return "skip", f"already in {file}"
            return "skip", f"not imported into {file}: {reason}"
        state.entries[file] = list(plan.after)
        return "add", f"added to {file}"
    kind = item.note or "noted"
    if p.untrusted and kind != "noted":
        kind = "noted"
    return _note(item, kind, state, "appended to notes.md")


def _note(item: Item, kind: str, state: State, said: str) -> tuple[str, str]:
    text = item.text.strip()
    if (kind, text) in state.notes:
        return "skip", "already in notes.md"
    try:
        if kind == "noted":
            edits.new_note(text)
        else:
            problem = entries.entry_problem(text) or check.problem(text)
            if problem is not None:
                raise EditRefused(problem)
    except EditRefused as e:
        return "skip", f"not imported: {str(e).removeprefix('refused: ')}"
    state.notes.add((kind, text))
    return f"note:{kind}", said


def run(service, name: str, dry_run: bool) -> dict:
    store = service.store
    home: Home = store.home
    path = layout.backups(home) / name
    if not path.is_file() or path.is_symlink():
        raise AdminRefused(f"refused: backups/ holds no file {name}")
    data = read_file(path)
    if len(data) > IMPORT_MAX:
        raise AdminRefused(f"refused: {name} is over {IMPORT_MAX:,} bytes")
    parsed = parse(data)
    with store.lock:
        store.detect_hand_edits()
    state = State(home)
    report, applied, skipped = [], 0, 0
    for number, item in parsed:
        what, said = decide(item, state, store.max_class)
        if what == "skip":
            skipped += 1
        elif not dry_run:
            edit = _apply(store, item, what)
            said += f" as edit {edit}"
            applied += 1
        else:
            applied += 1
        report.append(f"line {number}: {item.kind} {_short(item.text)!r}: {said}")
    verb = "would import" if dry_run else "imported"
    message = f"{verb} {applied} of {len(parsed)} items; {skipped} not"
    if dry_run:
        message += " (dry run: nothing was written)"
    return {"applied": applied, "skipped": skipped, "lines": report, "message": message}


def _short(text: str) -> str:
    return edits.shorten(text)


def _apply(store, item: Item, what: str) -> str:
    prov = item.provenance.dump()
    if what == "add":
        file = item.file or "memory.md"

        def plan(current: list[str]) -> edits.Plan:
            p = edits.plan(AddArgs(action="add", file=FILE_ARG[file], text=item.text), current)
            return edits.Plan("import", file, p.before, p.after)

        record = store.owner_edit(file, plan, OWNER, "import", {"imported": prov})
        return record.id
    kind = what.split(":", 1)[1]
    text = item.text.strip()
    now = store.now()
    when = _when(item.provenance.time, now)
    session = item.provenance.session or "owner"
    klass = item.provenance.klass
    if kind == "noted":
        block = notes.noted(text, when, session, klass, item.provenance.untrusted)
    else:
        source = item.source or "memory.md"
        block = notes.moved_or_dropped(kind, text, when, source, session, klass)
    notes_path = store.home.memory_file("notes.md")
    size = rollback.size_of(notes_path)
    with store.lock:
        try:
            store.append_notes(block)
            record = store.journal.append(
                now,
                Edit.model_validate(
                    {
                        "session": "owner",
                        "call": None,
                        "taint": None,
                        "untrusted": False,
                        "action": "import",
                        "file": None,
                        "to": "notes.md",
                        "before": [],
                        "after": [text],
                        "notes": [{"kind": kind, "text": text}],
                        "imported": prov,
                    }
                ),
            )
        except OSError as e:
            rollback.cut_back(notes_path, size)
            raise store.not_applied("notes.md", "import", None, e) from None
    return record.id
