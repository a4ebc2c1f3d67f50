"""bxctl memory export: every entry of memory.md and user.md and every note, with provenance.

Provenance (docs/export-format.md, docs/export-schema-v1.json): the file it is in, and the
session, edit, time, class and untrusted flag of the write that put it there, worked out from one
pass over the journal: for an entry, the last edit that added it to its file; for a note, the edit
that appended it (its header gives the session, class and untrusted). An entry or note that came
in by import carries the provenance it was exported with (the journal line's "imported"), so an
export, an import into an empty home and an export again give the same items.

The export is written atomically (0600) to {home}/backups/export-<time>.jsonl or .md, replacing
the previous export there; markdown is for reading, jsonl for import.
"""

import datetime as dt
import json
import os
import re

from memoryd.data import archive, layout
from memoryd.home import Home, atomic_write, ensure_dir, read_file
from memoryd.journal.journal import IDENTITY_FILES, EditLine, Journal
from memoryd.memory import notes
from memoryd.memory.memfiles import read_entries

FORMAT = "boxmaker-memory-export"
VERSION = 1
EXPORT_NAME = re.compile(r"^export-\d{8}T\d{6}Z\.(?:jsonl|md)$")


def _provenance(line: EditLine, file: str) -> dict:
    imported = getattr(line, "imported", None)
    if isinstance(imported, dict):
        return {**imported, "file": file}
    return {
        "file": file,
        "session": line.session,
        "edit": line.id,
        "time": line.time,
        "class": line.taint or "private",
        "untrusted": bool(line.untrusted),
    }


def items(home: Home, journal: Journal) -> list[dict]:
    """The export's items, entries first (memory.md, user.md), then notes in file order."""
    added: dict[tuple[str, str], dict] = {}
    appended: dict[tuple[str, str], list[dict]] = {}
    for line in journal.records():
        if line.to in IDENTITY_FILES:
            before = set(line.before)
            for entry in line.after:
                if entry not in before:
                    added[(line.to, entry)] = _provenance(line, line.to)
        for noted in line.notes:
            appended.setdefault((noted.kind, noted.text), []).append(_provenance(line, "notes.md"))
    out: list[dict] = []
    for file in IDENTITY_FILES:
        for text in read_entries(home, file):
            prov = added.get((file, text)) or {
                "file": file,
                "session": None,
                "edit": None,
                "time": None,
                "class": "private",
                "untrusted": False,
            }
            out.append({"kind": "entry", "file": file, "text": text, "provenance": prov})
    try:
        data = read_file(home.memory_file("notes.md"))
    except FileNotFoundError:
        data = b""
    for note in notes.parse(data):
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


def markdown(head: dict, found: list[dict]) -> bytes:
    out = [
        f"# Memory export (format {head['version']}, memoryd {head['memoryd']}, "
        f"exported {head['exported']})",
        "",
    ]
    section = None
    for item in found:
        where = item["provenance"]["file"] if item["kind"] == "entry" else "notes.md"
        if where != section:
            out += [f"## {where}", ""]
            section = where
        p = item["provenance"]
        label = p["class"] + (", untrusted" if p["untrusted"] else "")
        kind = "entry" if item["kind"] == "entry" else f"note {item['number']} ({item['note']})"
        out += [
            f"### {kind}",
            "",
            item["text"],
            "",
            f"*edit {p['edit']}, session {p['session']}, {p['time']}, {label}*",
            "",
        ]
    return "\n".join(out).encode()


def export(home: Home, journal: Journal, fmt: str, now: dt.datetime) -> tuple[str, int, int]:
    """Write the export into backups/; (path, entries, notes)."""
    found = items(home, journal)
    head = header(now)
    data = jsonl(head, found) if fmt == "jsonl" else markdown(head, found)
    folder = layout.backups(home)
    ensure_dir(folder)
    name = f"export-{now:%Y%m%dT%H%M%SZ}.{'jsonl' if fmt == 'jsonl' else 'md'}"
    path = folder / name
    atomic_write(path, data)
    for old in os.listdir(folder):
        if EXPORT_NAME.match(old) and old != name:
            os.unlink(folder / old)
    entries = sum(1 for i in found if i["kind"] == "entry")
    return str(path), entries, len(found) - entries
