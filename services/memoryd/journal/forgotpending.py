"""The staged writes a forget took away, as its journal line names them: "forgot": {..., "pending":
[the ids of the writes waiting for review whose lines it dropped from pending.jsonl]}.

A staged write lives only in pending.jsonl until the journal resolves it. A forget of a text that
a waiting write carries drops the write's line whole (it can never be accepted once its text is
forgotten), so without its id in the journal the id would be one memoryd handed out that neither
pending.jsonl holds nor the journal resolved: said as lost to damage or a hand edit, at every
pending, accept and start, with the advice to take its line back from a backup (which would bring
the forgotten text back). Named by the forget's line, it is resolved, by the owner.

A module of its own: the journal's index (byfile.py) and its rebuild (scan.pending_ids) find the
ids accept and reject resolved by their line's "pending" string; these sit in a list inside the
forget's "forgot", found here, and accept and reject of such an id name the forget's edit (edit_of).
Only a line whose action is "forget" counts, so that no other value can resolve a waiting write.
"""

import json
from pathlib import Path

from memoryd.journal.ids import EDIT_ID, PENDING_ID

KEY = b'"pending": ['  # json.dumps's own separators, as every journal line is written


def ids_in(data, start: int = 0, end: int | None = None) -> dict[str, str]:
    """The pending ids the forget lines of data[start:end] name (data: bytes or an mmap whose
    lines there start at start and end at newlines), each with its forget line's id, the later
    line's where two name one."""
    end = len(data) if end is None else end
    found: dict[str, str] = {}
    at = start
    while (hit := data.find(KEY, at, end)) != -1:
        before = data.rfind(b"\n", start, hit)
        first = start if before == -1 else before + 1
        last = data.find(b"\n", hit, end)
        last = end if last == -1 else last
        found.update(named(data[first:last]))
        at = last + 1
    return found


def named(raw: bytes) -> dict[str, str]:
    """The pending ids one journal line names as a forget's dropped writes, with the line's id;
    {} for any other line (or a damaged one)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(value, dict) or value.get("action") != "forget":
        return {}
    forgot, ident = value.get("forgot"), value.get("id")
    if not isinstance(forgot, dict) or not (isinstance(ident, str) and EDIT_ID.match(ident)):
        return {}
    listed = forgot.get("pending")
    if not isinstance(listed, list):
        return {}
    return {p: ident for p in listed if isinstance(p, str) and PENDING_ID.match(p)}


def in_months(months: list[Path]) -> dict[str, str]:
    """ids_in of every month: what a restore carries over of the home's forgets, whose journal
    the archive's replaces (data/leftout.carried_over)."""
    from memoryd.journal import scan  # scan reads ids_in for its rebuild

    found: dict[str, str] = {}
    for path in months:
        with scan.mapped(path) as data:
            if data.find(KEY) != -1:
                found.update(ids_in(data))
    return found


def edit_of(months: list[Path], pending_id: str) -> str | None:
    """The id of the newest forget line naming pending_id, searching the months newest first
    (asked only when accept or reject names such an id); None when none does."""
    from memoryd.journal import scan  # scan reads ids_in for its rebuild

    for path in reversed(months):
        try:
            with scan.mapped(path) as data:
                found = ids_in(data) if data.find(KEY) != -1 else {}
        except OSError:  # a month unreadable now: the refusal names no edit rather than fails
            continue
        if pending_id in found:
            return found[pending_id]
    return None
