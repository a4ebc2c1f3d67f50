"""The copies of the ids handed out, and which of them a number came from.

memoryd keeps the last ids it handed out in memory/.ids.json (the record) and in
index/ids-handed-out.json (the floor: a spare that outlives memory/ removed whole, so that ids do
not start again at 0001); ids.Issued reads both and keeps what this memoryd handed out since it
started. Why a module of its own: a spare trusted as much as the record could, with one digit
damaged, name the day's last id and refuse every write until midnight; and a refusal that worded
any such number as "the journal holds" sent the owner to look for a line the journal never held.
So the floor's numbers are taken only where memoryd could have handed them out (take_floor), and
a warning or refusal about an id handed out names the copy its number came from (named_by). What
the floor alone gives (a day's numbers above .ids.json's, an earlier first id) is never written
into .ids.json, which keeps instead which numbers rested on the floor alone (Issued.floor_only):
a count of lost writes or lines built on them names the floor, after later writes and starts too,
and a damaged first id is gone with the floor removed.
"""

import logging
from pathlib import Path

log = logging.getLogger(__name__)

# How far above .ids.json's number of a day (or above none: memory/ removed whole) the floor's is
# still taken as handed out. The floor is written with .ids.json, so it is higher only by the ids
# of a .ids.json lost, older or not written; no day here holds a million edits (each one a memory
# call journalled with an fsync). Kept this far below the day's last id, the spare can never bring
# a day to it.
FLOOR_AHEAD = 1_000_000

# What was said of a damaged floor, per process: memoryd reads the copies in several places.
_said: set[tuple[str, tuple[str, ...]]] = set()


def take_floor(
    found: dict[str, dict[str, int]],
    floor_days: dict[str, dict[str, int]],
    floor: Path,
    record: Path,
    sources: dict[str, dict[str, Path | None]],
    most: int,
) -> None:
    """Fold the floor's numbers into found (.ids.json's, per kind and day) where they are higher,
    noting in sources that the floor gave them. A number memoryd cannot have handed out (most,
    the last id a day can have, or more than FLOOR_AHEAD above .ids.json's) is damage: passed
    over, and said once naming the file. The next write rewrites the floor without it."""
    passed = []
    for kind, days in floor_days.items():
        mine = found.setdefault(kind, {})
        for day, number in days.items():
            if number >= most or number > mine.get(day, 0) + FLOOR_AHEAD:
                passed.append(f"{'p-' if kind == 'pending' else ''}{day}-{number:04d}")
            elif number > mine.get(day, 0):
                mine[day] = number
                sources.setdefault(kind, {})[day] = floor
    key = (str(floor), tuple(passed))
    if passed and key not in _said:
        _said.add(key)
        log.warning(
            "%s: damaged or edited by hand: it names %s as handed out, which memoryd cannot have "
            "done (the last id a day can have, or more than %s above what %s holds); passed "
            "over (the journal and %s give the next ids) and rewritten at the next write",
            floor,
            ", ".join(passed),
            f"{FLOOR_AHEAD:,}",
            record,
            record.name,
        )


def named_by(source: Path | None) -> str:
    """The copy a number handed out came from, as a line names it (source: Issued.source)."""
    if source is None:
        return "memoryd's own count of the ids it handed out since it started"
    return str(source)


def damaged_too(source: Path | None) -> str:
    """What a warning adds when the number came from a file: that file may be the damaged one."""
    return "" if source is None else f", or {source.name} is damaged"


def refusal_hint(source: Path | None) -> str:
    """What a refusal on the day's last id adds when a file, not the journal, gave that number:
    the file is likely damaged, and removing it while memoryd is stopped is safe (the journal and
    the other copy keep the ids handed out, and a floor at that number is passed over)."""
    if source is None:
        return ""
    return (
        f"; {source.name} damaged or edited by hand? Remove it while memoryd is stopped: the "
        "journal and the other copy keep the ids handed out"
    )
