"""The text of bxctl memory log and pending: one line per edit, and each waiting edit's arguments.

Entry text appears raw (the pending list shows it as JSON strings, so it stays on one line); bxctl
escapes whatever it prints. Pure functions over journal and pending records.
"""

import json

from memoryd.journal.idform import PENDING_ID
from memoryd.journal.journal import EditLine
from memoryd.memory.pendingline import PendingLine
from proto.plural import counted

OWNER = "owner"
NO_EDITS = "no edits yet"
NO_PENDING = "no edits are waiting for review"
REVIEW_OFF = "review is off; no edits are waiting for review"


def where(record: EditLine) -> str:
    """The file column of a log line: where the edit went, and what it refers to."""
    file, to = record.file, record.to
    action = record.action
    if action == "undo":
        return f"{to} (undoes {record.undoes})"
    if action == "accept":
        return f"{to} (pending {record.pending}, {record.requested})"
    if action == "reject":
        return f"{file} unchanged (pending {record.pending}, {record.requested})"
    if action == "restore":
        return restored_what(record)
    if action == "forget" and file is None:
        return f"{forgot_what(record)}, {_held_in(to)}"
    if file is None and to is None:
        return "no file"
    if file is None or file == to:
        return str(to)
    return f"{file}, saved to {to}"


def restored_what(record: EditLine) -> str:
    """A restore's line in words: the archive that replaced the memory, and where what it
    replaced went (data/lay.py: restored)."""
    said = record.restored if isinstance(record.restored, dict) else {}
    archive, made, replaced = (said.get(k) for k in ("archive", "made", "replaced"))
    what = f"backups/{archive}" if isinstance(archive, str) else "an archive bxctl copied in"
    if isinstance(made, str):
        what += f" (made {made})"
    before = f"backups/{replaced}" if isinstance(replaced, str) else "none (no memory was there)"
    return f"memory replaced from {what}; backup of what it replaced: {before}"


def _held_in(to: str | None) -> str:
    """Where a forget that edited no entry of a file took its text from, among the files."""
    return f"in {to}" if to else "held in no memory file"


SHOWN_IDS = 5  # staged write ids a forget's line is said with (then how many more)


def forgot_what(record: EditLine) -> str:
    """What a forget's journal line says it forgot, in words: the id it was given (the line
    never holds the text), how many more records that held it went with it, and the staged
    writes it took away."""
    forgot = record.forgot if isinstance(record.forgot, dict) else {}
    ident = forgot.get("id")
    keys = forgot.get("keys")
    named = _named(ident if isinstance(ident, str) else "")
    others = [k for k in keys if k != ident] if isinstance(keys, list) else []
    if ident == "restore":
        named = f"{named} ({counted(len(others), 'key')})" if others else named
    elif others:
        named += f" and {counted(len(others), 'more record')} that held it"
    return named + _dropped(forgot.get("pending"))


def _dropped(listed: object) -> str:
    """The staged writes waiting for review a forget took away with the text they carried (their
    ids: resolved by it, journal/forgotpending.py)."""
    ids = (
        [p for p in listed if isinstance(p, str) and PENDING_ID.match(p)]
        if isinstance(listed, list)
        else []
    )
    if not ids:
        return ""
    shown = ", ".join(ids[:SHOWN_IDS]) + (
        f" and {len(ids) - SHOWN_IDS:,} more" if len(ids) > SHOWN_IDS else ""
    )
    return (
        f", with the {'staged write' if len(ids) == 1 else 'staged writes'} {shown} that carried it"
    )


def _named(ident: str) -> str:
    if ident.startswith("session:"):
        session, _, number = ident.removeprefix("session:").rpartition(":")
        return f"record {number} of session {session} ({ident})"
    if ident == "restore":
        return "what the home had forgotten, carried over by a restore"
    if ident in ("text", "entry", ""):
        return "a text given by its words"
    return ident


def log_line(record: EditLine) -> str:
    session = record.session or OWNER
    return f"{record.id}  {record.time}  {session}  {record.action}  " + where(record)


def _value(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def pending_item(item: PendingLine) -> str:
    head = f"{item.id}  {item.time}  {item.session}  {item.action}  {item.file}"
    lines = [head]
    args = item.args if isinstance(item.args, dict) else {}
    for key, value in args.items():
        if key in ("action", "file"):
            continue
        if key == "entries" and isinstance(value, list):
            lines.append("  entries:")
            lines.extend(f"    {_value(entry)}" for entry in value)
        else:
            lines.append(f"  {key}: {_value(value)}")
    return "\n".join(lines)


def nothing_waiting(review_on: bool) -> str:
    """The answer of pending when no edit waits."""
    return NO_PENDING if review_on else REVIEW_OFF
