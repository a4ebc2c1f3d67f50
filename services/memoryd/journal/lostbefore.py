"""Edits the journal lost from its start: memoryd journalled them, their lines have left edits/.

When the journal's files are deleted or replaced (a cleaner, a sync tool, a hand rm), writes go on
journalling after the last id handed out, and bxctl memory log lists the edits from there on, as
if they were the home's first. What tells they are not is the earliest edit id handed out here,
kept for good beside the journal (ids.Issued.first): while it comes before the oldest line the
journal holds, the edits between were journalled and are gone, and log (history.py) says so where
its listing reaches the oldest line, for as long as their lines stay gone (runbook journal-lost),
and show and undo of an id before it say it may be one of them.
Only the month files' first lines are read, and the first id's line is looked for only when it
comes before them all (a clock that went back, or the lines lost). Each month's first id is kept
with the file's identity, size and times, and read again only when those changed (the month being
appended to, one replaced or edited by hand): log, show and undo cost what changed, not one read
per month there has ever been.
"""

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from memoryd.home import open_read
from memoryd.journal import damaged, idcopies
from memoryd.journal import months as journalmonths
from memoryd.journal.idform import order
from memoryd.journal.ids import Issued
from memoryd.journal.mapfile import FileView, line_starting

HEAD_BYTES = 65_536
# How many months' first ids are kept (memoryd has one journal; tests and restores make more).
KEPT_MOST = 4096

Stamp = damaged.Stamp
_firsts: dict[Path, tuple[Stamp, str | None]] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Lost:
    """Edits handed out from first on, whose lines the journal no longer holds before held."""

    first: str  # the earliest edit id handed out here (as far as is known)
    held: str  # the oldest edit id the journal holds a line of
    # The floor's path when first rests on it alone (Issued.first_source), else None.
    source: Path | None = None

    def according(self) -> str:
        """What the sentences add after first when only the floor gives it: it may be damaged."""
        if self.source is None:
            return ""
        named = idcopies.named_by(self.source)
        return f", according to {named}{idcopies.damaged_too(self.source)}"


def oldest_held(months: list[Path]) -> str | None:
    """The oldest edit id a line of the months starts with (a damaged line's too: its id was
    handed out), from each month's first lines; None when they hold none."""
    found: list[str] = []
    for path in months:
        edit_id = _first_id(path)
        if edit_id is not None:
            found.append(edit_id)
    return min(found, key=order, default=None)


def _first_id(path: Path) -> str | None:
    """The id the month's first line with one starts with, kept while the month's stamp holds
    (stamped before it is read: a change during the read shows at the next look)."""
    stamp = damaged.file_stamp(path)
    with _lock:
        kept = _firsts.get(path)
    if stamp is not None and kept is not None and kept[0] == stamp:
        return kept[1]
    try:
        with open_read(path) as f:
            edit_id = _read_first_id(f)
    except FileNotFoundError:
        return None
    if stamp is not None:
        with _lock:
            if len(_firsts) >= KEPT_MOST:
                _firsts.clear()
            _firsts[path] = (stamp, edit_id)
    return edit_id


def _read_first_id(f: BinaryIO) -> str | None:
    """The id the first line of f's first HEAD_BYTES that has one starts with."""
    for raw in f.read(HEAD_BYTES).split(b"\n"):
        edit_id = damaged.id_at_start(raw)
        if edit_id is not None:
            return edit_id
    return None


def holds(months: list[Path], edit_id: str) -> bool:
    """Whether a line of the months (those that may hold it: months.py) starts with edit_id. A
    clock that went back puts an id of an earlier day after the month files' first lines, so an
    id before them is looked for before it is called lost (mapped, not read whole)."""
    needle = b'{"id": ' + json.dumps(edit_id).encode()
    for path in journalmonths.from_month(months, edit_id):
        try:
            f = open_read(path)
        except FileNotFoundError:
            continue
        with f:
            try:
                data = FileView(f)
            except ValueError:  # empty
                continue
            with data:
                at = line_starting(data, needle)
                if at != -1:
                    return True
    return False


def lost(months: list[Path], issued: Issued) -> Lost | None:
    """The edits lost from the journal's start, or None when it holds the first one handed out
    (or holds none: log says that case itself, history.LINES_LOST)."""
    first = issued.first("edit")
    held = oldest_held(months)
    if first is None or held is None or order(first) >= order(held) or holds(months, first):
        return None
    return Lost(first, held, issued.first_source("edit"))


def sentence(found: Lost) -> str:
    """What log says of them, under the oldest edit it lists."""
    return (
        f"edits memoryd journalled before {found.held} (from {found.first} on"
        f"{found.according()}) are no longer in the journal: their lines left memory/edits/ "
        "(deleted or replaced); the memory files stand"
        " as they are. A backup holds the lines up to its time: tar -xzOf ARCHIVE memory/edits"
        " prints them and changes nothing (runbook: journal-lost)"
    )


def refused_as_lost(months: list[Path], issued: Issued, edit_id: str) -> str | None:
    """What show and undo add to "no edit ID" when ID comes before the journal's oldest line
    and the journal lost lines from its start: it may be one of them (which of those ids were
    handed out the journal no longer says)."""
    found = lost(months, issued)
    if found is None or not order(found.first) <= order(edit_id) < order(found.held):
        return None
    return (
        f"edits memoryd journalled before {found.held} (from {found.first} on"
        f"{found.according()}) are no longer in the journal, their lines deleted or replaced "
        "(runbook: journal-lost)"
    )
