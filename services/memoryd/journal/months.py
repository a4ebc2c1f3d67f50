"""Which month file of edits/ an edit is appended to, and which month files may hold an id's line.

Every reader takes the journal in the order of its month files' names, then of the lines in each
(byfile.py's index of each file's latest edit, scan.py's tail and from_id behind log, --from, undo
and hand-edit detection, forget's and the labels' readers, backup and restore), so the edit made
last must be the last line in that order. Picking the month from the wall clock breaks that when
the clock goes back over a month's end (NTP stepping it back just after midnight on the 1st) or
was ahead and is mended (a bad RTC at boot): the new line lands in an earlier month file than lines
made before it, every reader takes an older edit for the file's latest, and memoryd journals hand
edits nobody made and refuses writes. So an edit is appended to its clock's month file or to the
newest month file there, whichever is later. The line keeps the clock's time and an id of the
clock's day; a line of day D is thus in D's month file or a later one, which is where the line of
an id is looked for (from_month). The numbers of a day already given are counted over every month
file (heldids.py): the newest can end on a line of the day before while the day's lines are above.
"""

import datetime as dt
import os
from pathlib import Path

from memoryd.home import MONTH_FILE, Home


def names(folder: Path) -> list[str]:
    """The month files of folder, oldest first ([] when it is missing)."""
    try:
        return sorted(n for n in os.listdir(folder) if MONTH_FILE.match(n))
    except FileNotFoundError:
        return []


def append_path(home: Home, when: dt.datetime) -> Path:
    """The month file an edit made at when (UTC) is appended to: its own month's, or the newest
    month file there when that is later (the clock is behind the journal's end)."""
    own = home.edits_month(when)
    held = names(home.edits)
    if held and held[-1] > own.name:
        return home.edits / held[-1]
    return own


def from_month(paths: list[Path], edit_id: str) -> list[Path]:
    """Those of paths (month files) that may hold the line of edit_id (or of a day,
    YYYY-MM-DD...): its day's month file and every later one."""
    return [path for path in paths if path.name[:7] >= edit_id[:7]]
