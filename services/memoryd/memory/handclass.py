"""Whether a hand edit's new entries can be taken as the owner's: the file's journal must be whole.

An entry no journal line brought into memory.md or user.md is the owner's (class private,
classrule.entry_class), and hand-edit detection journals what the file holds beyond the journal's
last after as the owner's edit (handedit.py). That holds only while the journal is whole after
the file's latest line: a write memoryd made and journalled, whose line was then cut short by a
power cut (its write stands in the files), or lost with its month file, leaves the file holding
entries no whole line explains. Taken as the owner's, an entry a secret session wrote would come
back as private into every prompt once max_class is below secret.

So before a hand edit that brings entries in is journalled, the journal after the file's latest
whole line (and after the latest restore, which replaced the files whole) is looked at: a line
there that does not parse, unless what is left of it names another file, or an edit id memoryd
handed out after it that no line holds (ids.Issued; lines lost from the journal's start when the
file has no line at all: lostbefore.py). Either way memoryd cannot know who wrote those entries:
the hand edit is journalled with "carried": "unknown", which journal.class_source reads as no
class ("?", the highest), so the block leaves them out while max_class is below the highest. The
owner keeps one by writing it again himself (bxctl memory edit): a text his own edit brings in is
his. A whole journal leaves the hand edit the owner's, as before.

Read only when a hand edit brings entries in (rare), so it reads the journal after the file's
latest line once, mapped.
"""

from dataclasses import dataclass
from pathlib import Path

from memoryd.journal import damaged, heldids, lostbefore, months
from memoryd.journal.idform import order
from memoryd.journal.journal import EditLine, Journal
from memoryd.journal.linefile import parse_line
from memoryd.journal.mapfile import line_bytes, line_starting, mapped
from memoryd.trust import classrule
from proto.labels import CLASS_RANK

# A carried value that is no class: class_source reads it as "?", the highest class.
UNKNOWN = "unknown"
# What the block's classes say of an entry whose line names no class (said_unknown).
UNKNOWN_CLASS = "?"
_RESTORE = b'"action": "restore"'
DAMAGED = "journal-damaged"
LOST = "journal-lost"
# At most this many ids of a day are looked up one by one (a day of more edits is rare).
MOST_IDS = 200_000


@dataclass(frozen=True)
class NotWhole:
    """Why a file's journal after its latest line may hide a write of memoryd's, and the
    runbook entry that says how the owner sees it."""

    why: str
    runbook: str


def why_not_whole(journal: Journal, file: str, latest: str | None) -> NotWhole | None:
    """Why file's journal history after its latest whole line (id latest, None for none) may
    hide a write of memoryd's; None when it is whole."""
    paths = journal.month_files()
    found, floor, seen = _after(paths, file, latest)
    if not seen and latest is not None:
        found, floor, seen = _after(paths, file, None)
        floor = floor or latest
    if found is not None:
        edit = f" (edit {found.id})" if found.id else ""
        return NotWhole(f"line {found.number:,} of {found.path.name}{edit} is damaged", DAMAGED)
    gone = _lost_after(journal, floor)
    if gone is not None:
        return NotWhole(f"the line of edit {gone}, which memoryd journalled, has left it", LOST)
    return None


def _after(
    paths: list[Path], file: str, latest: str | None
) -> tuple[damaged.Damaged | None, str | None, bool]:
    """The last damaged line that may be of file after latest's line (and after the latest
    restore), the id after which ids must all be held (latest or that restore's), and whether
    latest's line was found."""
    found: damaged.Damaged | None = None
    floor = latest
    seen = latest is None
    needle = None if latest is None else b'{"id": "' + latest.encode() + b'"'
    for path in paths if latest is None else months.from_month(paths, latest):
        with mapped(path) as data:
            position = 0
            if not seen and needle is not None:
                position = line_starting(data, needle)
                if position == -1:
                    continue
                seen = True
                end = data.find(b"\n", position)
                position = len(data) if end == -1 else end + 1
            while position < len(data):
                end = data.find(b"\n", position)
                end = len(data) if end == -1 else end
                # A line that names another file is passed over unparsed, whole or not (a month
                # of notes after the file's latest line costs two searches a line).
                if _may_be_of(data, position, end, file):
                    raw, cut = line_bytes(data, position, end)
                    raw = raw.strip()
                    record = parse_line(raw, EditLine) if raw and not cut else None
                    if cut or isinstance(record, str):
                        found = damaged.found_at(path, data, position, end, EditLine)
                    elif record is not None and record.action == "restore":
                        found, floor = None, record.id  # the files were replaced whole here
                position = end + 1
    return found, floor, seen


def _may_be_of(data, start: int, end: int, file: str) -> bool:
    """Whether the line data[start:end] may be one of file's, or a restore: not when its first
    "to" names another file whole (memoryd writes "to" before any entry; a quote inside an entry
    is escaped, so only the key matches)."""
    at = data.find(b'"to": ', start, end)
    if at == -1:
        return True  # torn before it, or not memoryd's: may be anything
    value = at + len(b'"to": ')
    if data[value : value + 4] == b"null":
        return data.find(_RESTORE, start, end) != -1
    name = file.encode()
    if data[value : value + 1] != b'"' or data.find(b'"', value + 1, end) == -1:
        return True  # cut inside the value
    return data[value + 1 : value + 2 + len(name)] == name + b'"'


def _lost_after(journal: Journal, floor: str | None) -> str | None:
    """An edit id memoryd handed out after floor that no journal line holds, or None."""
    if floor is None:
        lost = lostbefore.lost(journal.month_files(), journal.issued)
        if lost is not None:
            return lost.first
    held = heldids.held(journal.home.edits)
    low_day, low_number = order(floor) if floor is not None else ("", 0)
    for day, last in sorted(journal.issued.days("edit").items()):
        if day < low_day:
            continue
        first = low_number + 1 if day == low_day else 1
        for number in range(first, min(last, first + MOST_IDS) + 1):
            edit_id = f"{day}-{number:04d}"
            if held.count(edit_id) == 0:
                return edit_id
    return None


def hand_edit_sentence(file: str, found: NotWhole, brought: int) -> str:
    """What memoryd's log adds to a hand edit journalled with entries of unknown class."""
    name = file.removesuffix(".md")
    these = "the entry it brings in" if brought == 1 else f"the {brought:,} entries it brings in"
    return (
        f"the journal of {file} is not whole after its last line ({found.why}), so {these} may be "
        "memoryd's own write of a session's, not yours: journalled with its class unknown, "
        "taken as the highest, and the block leaves it out while max_class is below that; to "
        f"keep one as yours, write it again in bxctl memory edit {name} (its text changed), "
        f"which brings it in as the owner's (runbook: {found.runbook})"
    )


def brought_in(before: list[str], after: list[str]) -> int:
    came = set(before)
    return sum(1 for text in after if text not in came)


def said_unknown(above: dict[str, str], sources: dict[str, str | None]) -> dict[str, str]:
    """above (entries above max_class, with their class), each whose journal line names no class
    given as UNKNOWN_CLASS rather than the highest it is taken as, for left_out_reason."""
    return {
        text: UNKNOWN_CLASS if sources.get(text) not in (None, *CLASS_RANK) else klass
        for text, klass in above.items()
    }


def left_out_reason(klass: str, max_class: str) -> str:
    """Why the block leaves out an entry above max_class (klass from said_unknown)."""
    if klass != UNKNOWN_CLASS:
        return classrule.block_reason(klass, max_class)
    return (
        "its class is unknown (the journal line that brought it in names none: a hand edit "
        "journalled while the journal had a damaged or lost line, or a line edited by hand), so "
        f"it is taken as {classrule.HIGHEST}, above what memory may hold ({max_class}); to keep "
        "it as yours, write it again in bxctl memory edit (its text changed), which brings it "
        "in as the owner's"
    )
