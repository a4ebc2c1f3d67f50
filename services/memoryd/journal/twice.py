"""An edit id the journal holds on more than one line, found and said.

memoryd hands each id out once (journal.py, ids.py), but the journal is the owner's file too: a
line whose id was changed by hand, or two journals concatenated, leaves one id on two lines. log
lists both; show and undo name one edit by the id, and which of the lines the owner meant cannot
be known. Looked up as a single line, show gave whichever its search met first, and undo checked
that line against the file's latest edit, which may be the other line with that id: it reverted an
edit that was not the file's latest, one the owner never saw under that id. So show and undo take
an id only when exactly one line holds it (one_line), and refuse otherwise in one line naming the
journal files and lines that hold it; log says which of the ids it lists are held twice (among,
said_of), and restore says it of the archive's journal (of_archive).

A line is found as memoryd writes it: starting with {"id": "<id>" (scan.py). Every month counts,
not only the id's own: a concatenation can put a line in another month's file. Whether an id is
held twice, and by which months, is asked of the ids kept per month (heldids.py, read on only as
far as the months grew), so show, undo and log cost what is new in the journal, not all of it; only
the months that hold a twice-held id are searched to name its lines, a WINDOW at a time, each
ending at a line's end, its pages given back once passed.
"""

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import AdminRefused
from memoryd.journal import damaged, heldids, mapfile, scan
from memoryd.journal.idform import DAY_B, NUMBER_B
from memoryd.journal.journal import EditLine, Journal
from proto.plural import counted

_AFTER_NEWLINE = re.compile(rb'\n\{"id": "(' + DAY_B + b"-" + NUMBER_B + rb')"')
NAMED_MOST = 5


@dataclass(frozen=True)
class Place:
    path: Path
    number: int  # the line's number from 1
    offset: int  # where the line starts

    def said(self, name: str | None = None) -> str:
        return f"{name or self.path} line {self.number:,}"


def _windows(data):
    """(start, bytes) of data a WINDOW at a time, each ending just after a newline (or at the
    end). A line longer than any memoryd writes is a window of its own: its first bytes and its
    newline (mapfile.line_bytes), enough for the id at its start and the lines' count."""
    start = 0
    while start < len(data):
        reach = start + mapfile.LONG_LINE
        end = data.find(b"\n", min(start + scan.WINDOW, len(data)), reach)
        if end == -1 and reach < len(data):  # the line at start + WINDOW may be too long
            first = data.rfind(b"\n", start, min(start + scan.WINDOW, len(data))) + 1 or start
            if first > start:
                yield start, data[start:first]  # the whole lines before it
            end = data.find(b"\n", first)
            end = len(data) if end == -1 else end
            line, cut = mapfile.line_bytes(data, first, min(end + 1, len(data)))
            yield first, line + b"\n" if cut and end < len(data) else line
            start = end + 1
            continue
        end = len(data) if end == -1 else end + 1
        yield start, data[start:end]
        start = end


def held(months: list[Path], edit_id: str) -> list[Place]:
    """Every line of the months (oldest first) that starts with edit_id, in order."""
    needle = b'{"id": ' + json.dumps(edit_id).encode()
    out: list[Place] = []
    for path in months:
        with mapfile.mapped(path) as data:
            line = 1
            for start, chunk in _windows(data):
                at = chunk.find(needle)
                while at != -1:
                    if at == 0 or chunk[at - 1] == 0x0A:
                        out.append(Place(path, line + chunk.count(b"\n", 0, at), start + at))
                    at = chunk.find(needle, at + 1)
                line += chunk.count(b"\n")
    return out


def counts(months: list[Path], wanted: set[str] | None = None) -> Counter[str]:
    """How many lines start with each id (of wanted, or every id), over the months: one pass."""
    found: Counter[str] = Counter()
    for path in months:
        with mapfile.mapped(path) as data:
            for _, chunk in _windows(data):
                ids = [m.decode() for m in _AFTER_NEWLINE.findall(chunk)]
                first = scan.ID_AT_START.match(chunk)
                if first is not None:
                    ids.append(f"{first.group(1).decode()}-{first.group(2).decode()}")
                found.update(i for i in ids if wanted is None or i in wanted)
    return found


def places_said(places: list[Place], name=None) -> str:
    """The lines, each month named once: "F line 1, line 3 and G line 2"."""
    parts: list[str] = []
    last = None
    for place in places:
        where = place.said(name(place.path) if name else None)
        parts.append(where if place.path != last else f"line {place.number:,}")
        last = place.path
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def refusal(edit_id: str, places: list[Place]) -> AdminRefused:
    return AdminRefused(
        f"refused: edit {edit_id} is held by {len(places)} journal lines ({places_said(places)}), "
        "so which edit the id names cannot be known; memoryd neither shows nor undoes it until "
        "one line holds it: delete the line copied there by hand (a backup made before the copy "
        "holds only memoryd's: tar -xzOf ARCHIVE memory/edits prints its journal and changes "
        f"nothing) {damaged.RUNBOOK}"
    )


def one_line(journal: Journal, edit_id: str) -> EditLine:
    """The one journal line of edit_id (whatever month file holds it); AdminRefused naming the
    lines when more than one holds it, or saying why none does."""
    edits = journal.home.edits
    ids = heldids.held(edits)
    holding = [edits / name for name in ids.files(edit_id)]
    if ids.count(edit_id) > 1:
        raise refusal(edit_id, held(holding, edit_id))
    for path in holding:
        record = scan.line_with_id(path, edit_id)
        if record is not None:
            return record
    raise AdminRefused(journal.missing_sentence(edit_id))


def among(months: list[Path], ids: list[str]) -> dict[str, list[Place]]:
    """Those of ids (a listing's) that more than one line of the months (a home's month files)
    holds, each with its lines, in the order of ids: the months that hold such an id are
    searched, no other."""
    if not months:
        return {}
    found = heldids.held(months[0].parent)
    twice = sorted({i for i in ids if found.count(i) > 1}, key=ids.index)
    return {i: held([p for p in months if p.name in found.files(i)], i) for i in twice}


def said_of(found: dict[str, list[Place]]) -> list[str]:
    """A sentence for each id among() found (at most NAMED_MOST, then how many more)."""
    out = [
        f"edit {i} is held by {counted(len(places), 'journal line')} ({places_said(places)}): "
        "show and undo refuse that id until one line holds it"
        for i, places in list(found.items())[:NAMED_MOST]
    ]
    if len(found) > NAMED_MOST:
        out.append(f"{len(found) - NAMED_MOST:,} more ids are each held by more than one line")
    return out


def of_archive(journal: Journal) -> str | None:
    """What restore says of a staged journal holding an id on more than one line, or None."""
    months = journal.month_files()
    twice = sorted(i for i, n in counts(months).items() if n > 1)
    if not twice:
        return None
    root = journal.home.root

    def name(path: Path) -> str:
        return str(path.relative_to(root))

    named = "; ".join(
        f"edit {i} on {places_said(held(months, i), name)}" for i in twice[:NAMED_MOST]
    )
    more = f" and {len(twice) - NAMED_MOST:,} more ids" if len(twice) > NAMED_MOST else ""
    return (
        f"the archive's journal holds {counted(len(twice), 'edit id')} on more than one line "
        f"({named}{more}): show and undo refuse such an id until one line holds it (delete the "
        "copied line in memory/edits/)"
    )
