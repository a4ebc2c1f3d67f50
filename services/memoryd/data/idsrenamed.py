"""The edit ids a restore gives to other edits than the ones this home showed under them.

A restore lays the archive's journal as it is: its lines keep their ids, since other lines (an
undo's "undoes", a forget's, an accept's pending id) and the owner's notes name them. An archive
made by another home (another machine, a second stack) numbers its edits as that home did, so an
id this home handed out for one of its own writes, and that `bxctl memory log` showed, may name
the archive's edit afterwards. Renumbering the archive would break the names inside it; so the
restore says it instead, once, with the ids and where this home's own edits went (the backup made
before laying, whose journal holds them as they were, which the answer names).

An id in both journals names the same edit when what the line says of the edit agrees (its time,
session, call, taint, action, file and the ids it names: an archive of this home, older or newer);
a forget's scrub of a line's texts leaves those alone, so a forget since the archive was made is
not taken for another edit. Only the ids both journals hold
are read as JSON; the rest is found by the id at the start of each line, as the restore's other
scans of the journal do.
"""

import re
from pathlib import Path

from memoryd.journal import idform
from memoryd.journal.mapfile import finditer, mapped
from proto.jsonread import loads_or_none
from proto.plural import counted

# The id a journal line starts with, as memoryd writes it, and the line it starts.
_LINE = re.compile(
    rb'^(?:\xef\xbb\xbf)?[ \t]*\{"id": "(' + idform.DAY_B + rb"-" + idform.NUMBER_B + rb')".*$',
    re.M,
)
_SAME = ("time", "session", "call", "taint", "action", "file", "to", "undoes", "pending")
# The most ids the answer names one by one; past it, the first and last and how many.
MOST_NAMED = 6


def _lines(paths: list[Path]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for path in paths:
        with mapped(path) as data:
            for m in finditer(_LINE, data):
                found.setdefault(m.group(1).decode(), m.group(0))
    return found


def _what(line: bytes) -> tuple | None:
    # A damaged line (None): what it was cannot be told, so it is not said renamed.
    value = loads_or_none(line)
    return tuple(value.get(key) for key in _SAME) if isinstance(value, dict) else None


def renamed(home_months: list[Path], archive_months: list[Path]) -> list[str]:
    """The ids both journals hold for edits that are not the same, in order."""
    here = _lines(home_months)
    there = _lines(archive_months)
    out = []
    for edit_id in sorted(here.keys() & there.keys()):
        mine, theirs = _what(here[edit_id]), _what(there[edit_id])
        if mine is not None and theirs is not None and mine != theirs:
            out.append(edit_id)
    return out


def said(ids: list[str]) -> str:
    """The answer's words for ids ("" when there are none)."""
    if not ids:
        return ""
    named = ", ".join(ids) if len(ids) <= MOST_NAMED else f"{ids[0]} to {ids[-1]}"
    verb = "names" if len(ids) == 1 else "name"
    return (
        f"{counted(len(ids), 'edit id')} this home had given its own edits ({named}) now {verb} "
        "the archive's edits, made by the home it came from (this home's own are in the backup "
        "of what it held before)"
    )
