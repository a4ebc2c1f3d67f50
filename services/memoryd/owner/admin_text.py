"""The text of bxctl memory log and pending: one line per edit, and each waiting edit's arguments.

Entry text appears raw (the pending list shows it as JSON strings, so it stays on one line); bxctl
escapes whatever it prints. Pure functions over journal and pending records.
"""

import json

from memoryd.journal.journal import EditLine
from memoryd.memory.review import PendingLine

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
    if file is None or file == to:
        return str(to)
    return f"{file}, saved to {to}"


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
