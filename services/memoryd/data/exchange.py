"""bxctl memory export: every entry of memory.md and user.md and every note, with provenance.

Provenance (docs/export-format.md, docs/export-schema-v1.json): the file it is in, and the
session, edit, time, class and untrusted flag of the write that put it there, worked out from one
pass over the journal: for an entry, the last edit that added it to its file; for a note, the edit
that appended it (its header gives the session, class and untrusted). An entry or note that came
in by import carries the provenance it was exported with (the journal line's "imported"), but
for its edit, which is this home's import edit (the one `bxctl memory show` shows here), so an
export, an import into an empty home and an export again give the same items, each edit id
naming the write in the home that exported it.

The export is one consistent picture, as a backup is: the writer is taken only to hold the files
it reads (memory.md, user.md, notes.md and the journal, an open and an fstat each: snapshot.py),
between two writes; the items are built from those, off the writer. A memory call or a restore
landing meanwhile is not in the export, and never half in it (an entry without its journal line,
the journal of one home with the files of another).

The export is written atomically (0600) into {home}/backups/ under a name never reused, and the
exports made before it are removed but for the youngest (exportfiles.py, which also takes a
forgotten text out of every export there). markdown is for reading (exportmd.py, which sets
each text apart from the document's own lines), jsonl for import. A failure is one line naming
the file, and leaves no export.

A provenance time is one import takes back (parse_time, which import checks with): a journal
line's time that is none (edited by hand to 2026-02-30, say) is left out (null; a note's header
time stands in), logged naming the edit, so that one line cannot make the whole export one that
import refuses.
"""

import datetime as dt
import json
import logging
import re
import time
from collections.abc import Iterator

from memoryd.data import archive, exportfiles, exportmd, layout, snapshot
from memoryd.errors import AdminRefused, FileDamaged
from memoryd.home import Home, ensure_dir
from memoryd.journal import forgotten
from memoryd.journal.journal import IDENTITY_FILES, EditLine, Journal
from memoryd.journal.linefile import parse_line
from memoryd.memory import entries, notes
from memoryd.writer import WRITE, Writer

FORMAT = "boxmaker-memory-export"
VERSION = 1

log = logging.getLogger(__name__)

# A provenance time: UTC to the minute (a note's header) or the second (a journal line).
TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2})?Z")


def parse_time(text: str) -> dt.datetime:
    """A provenance time as a datetime in UTC; ValueError unless it is one, and a real time."""
    if not TIME.fullmatch(text):
        raise ValueError(text)
    fmt = "%Y-%m-%dT%H:%M:%SZ" if len(text) == 20 else "%Y-%m-%dT%H:%MZ"
    return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC)


def _taken(text: object) -> str | None:
    """text when import would take it as a time, else None."""
    if not isinstance(text, str):
        return None
    try:
        parse_time(text)
    except ValueError:
        return None
    return text


def _provenance(line: EditLine, file: str) -> dict:
    imported = getattr(line, "imported", None)
    if isinstance(imported, dict):
        # The edit is this home's import: the id the item came with names an edit of the home
        # it was exported from, and here the same id is another edit (both count from 0001 each
        # day). The session, time and label stay those it came with: its trust rests on them.
        return {**imported, "file": file, "edit": line.id, "time": _taken(imported.get("time"))}
    return {
        "file": file,
        "session": line.session,
        "edit": line.id,
        "time": _taken(line.time),
        "class": line.taint or "private",
        "untrusted": bool(line.untrusted),
    }


def hold(home: Home, journal: Journal) -> snapshot.Snapshot:
    """On the writer: the files an export reads, held as they are now."""
    started = time.monotonic()
    listed = [(f"memory/{name}", home.memory_file(name)) for name in (*IDENTITY_FILES, "notes.md")]
    listed += [(f"memory/edits/{path.name}", path) for path in journal.month_files()]
    snap = snapshot.of_files(listed)
    snap.waited = time.monotonic() - started
    return snap


def _held(snap: snapshot.Snapshot, name: str) -> bytes | None:
    for held in snap.files:
        if held.name == name:
            if held.size > entries.MAX_BYTES:  # refused by its size, never read whole
                raise entries.TooLarge(name.removeprefix("memory/"), held.size)
            return b"".join(held.chunks())
    return None


def read_entries(snap: snapshot.Snapshot, name: str) -> list[str]:
    """The entries of memory.md or user.md as the snapshot holds them."""
    data = _held(snap, f"memory/{name}")
    if data is None:
        raise FileDamaged(f"{name} is missing")
    return entries.parse(entries.decode(data, name))


def _journal(snap: snapshot.Snapshot) -> Iterator[EditLine]:
    """Every journal line the snapshot holds, oldest first, one at a time: a month is read a
    chunk at a time, never whole (the journal is never trimmed, so it is the one file that grows
    with the home's age; held whole, with every line parsed, a long one took more than memoryd's
    memory limit). A damaged line is skipped and logged."""
    for held in snap.files:
        if not held.name.startswith("memory/edits/"):
            continue
        for number, raw in enumerate(_lines(held), start=1):
            if not raw.strip():
                continue
            line = parse_line(raw, EditLine)
            if isinstance(line, str):
                log.warning("%s: line %d %s; skipped", held.name, number, line)
            else:
                yield line


def _lines(held: snapshot.Held) -> Iterator[bytes]:
    """The lines of a held file (without their newlines), read a chunk at a time; a line torn by
    a chunk's end is carried into the next."""
    pending: list[bytes] = []
    for chunk in held.chunks():
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending.append(chunk)  # a line longer than a chunk: held until its newline
            continue
        whole = chunk[:cut]
        if pending:
            whole = b"".join([*pending, whole])
        pending = [chunk[cut:]] if cut < len(chunk) else []
        yield from whole.split(b"\n")[:-1]
        del whole
    if pending:
        yield b"".join(pending)


def items(snap: snapshot.Snapshot) -> list[dict]:
    """The export's items from the files held, entries first (memory.md, user.md), then notes
    in file order, but for the markers standing where the owner forgot a note. The files are
    read first, so that the pass over the journal keeps the provenance of what they hold only:
    what it keeps is bounded by the entries and notes there are, not by the edits made."""
    current = {file: read_entries(snap, file) for file in IDENTITY_FILES}
    held_notes = [
        # What stands where the owner forgot a note is no memory: brought in elsewhere, it
        # would be recalled as a note, with the forgotten note's provenance.
        note
        for note in notes.parse(_held(snap, "memory/notes.md") or b"")
        if not forgotten.is_marker(note.text)
    ]
    wanted = {(file, text) for file, texts in current.items() for text in texts}
    noted = {(note.kind, note.text) for note in held_notes}
    added: dict[tuple[str, str], dict] = {}
    appended: dict[tuple[str, str], list[dict]] = {}
    for line in _journal(snap):
        imported = getattr(line, "imported", None)
        said = imported.get("time") if isinstance(imported, dict) else line.time
        if said is not None and _taken(said) is None:
            shown = str(said)[:40]
            log.warning(
                "export: edit %s gives the time %r, which is no time; left out", line.id, shown
            )
        if line.to in IDENTITY_FILES:
            before = set(line.before)
            for entry in line.after:
                if entry not in before and (line.to, entry) in wanted:
                    added[(line.to, entry)] = _provenance(line, line.to)
        for written in line.notes:
            if (written.kind, written.text) in noted:
                appended.setdefault((written.kind, written.text), []).append(
                    _provenance(line, "notes.md")
                )
    out: list[dict] = []
    for file in IDENTITY_FILES:
        for text in current[file]:
            prov = added.get((file, text)) or {
                "file": file,
                "session": None,
                "edit": None,
                "time": None,
                "class": "private",
                "untrusted": False,
            }
            out.append({"kind": "entry", "file": file, "text": text, "provenance": prov})
    for note in held_notes:
        found = appended.get((note.kind, note.text)) or []
        edit = found.pop(0) if found else {}
        prov = {
            "file": "notes.md",
            "session": edit.get("session", note.session),
            "edit": edit.get("edit"),
            "time": edit.get("time") or note.time,
            "class": note.klass,
            "untrusted": note.untrusted,
        }
        out.append(
            {
                "kind": "note",
                "note": note.kind,
                "number": note.number,
                "source": note.source,
                "text": note.text,
                "provenance": prov,
            }
        )
    return out


def header(now: dt.datetime) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "memoryd": archive.memoryd_version(),
        "exported": f"{now:%Y-%m-%dT%H:%M:%SZ}",
    }


def jsonl(head: dict, found: list[dict]) -> bytes:
    lines = [json.dumps(head, ensure_ascii=True)]
    lines += [json.dumps(item, ensure_ascii=True) for item in found]
    return ("\n".join(lines) + "\n").encode()


def export(
    home: Home,
    journal: Journal,
    fmt: str,
    now: dt.datetime,
    writer: Writer | None = None,
    remove_older: bool = True,
) -> tuple[str, int, int]:
    """Write the export into backups/; (path, entries, notes). The files are held on writer
    (memoryd's; None: on this thread, for a home no memoryd writes). AdminRefused when it cannot
    be written, naming the file and leaving none."""
    if writer is None:
        snap = hold(home, journal)
    else:
        snap = writer.submit(WRITE, hold, home, journal).result()
    try:
        log.debug("export: the writer held the files for %.3f ms", snap.waited * 1000)
        found = items(snap)
    finally:
        snap.close()
    head = header(now)
    data = jsonl(head, found) if fmt == "jsonl" else exportmd.markdown(head, found)
    folder = layout.backups(home)
    try:
        ensure_dir(folder)
        path = exportfiles.new_file(folder, now, "jsonl" if fmt == "jsonl" else "md", data)
    except OSError as e:
        where = e.filename or folder
        log.error("%s: export failed: %s", where, e.strerror or e)
        raise AdminRefused(
            f"refused: the export failed writing {where} ({e.strerror or e}); "
            f"no export was left in {folder}"
        ) from None
    if remove_older:
        exportfiles.remove_older_exports(home, path.name, now)
    entries = sum(1 for i in found if i["kind"] == "entry")
    return str(path), entries, len(found) - entries
