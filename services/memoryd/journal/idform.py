"""Edit and pending ids as they are written (YYYY-MM-DD-NNNN, p-YYYY-MM-DD-NNNN): their pattern,
as text and as bytes for the journal's byte patterns, and their day and number.

Why a module of its own: every reader of a line or a name checks an id against these, while only
the journal and the review hand ids out (ids.py, which keeps those handed out in this home).
"""

import re

# An id's day, and its number: NNNN, at least four digits and at most nine. No day holds a
# billion edits, so a longer number is a damaged or hand-edited id, and every pattern that reads
# an id (here, and the journal's byte patterns: scan.py, heldids.py, twice.py, damaged.py) takes
# it as no id, as it takes any other damage: int() of such a number raises past 4,300 digits
# (where a write had already renamed its file into place), and costs time long before that.
DAY = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
NUMBER = "[0-9]{4,9}"
NUMBER_MOST = 10**9 - 1
DAY_B = DAY.encode()
NUMBER_B = NUMBER.encode()

EDIT_ID = re.compile(rf"^({DAY})-({NUMBER})\Z")
PENDING_ID = re.compile(rf"^p-{DAY}-{NUMBER}\Z")
_DAY_NUMBER = re.compile(rf"({DAY})-({NUMBER})\Z")


def day_numbers(ids: list[str], day: str) -> list[int]:
    """The NNNN of every id of the given day (ids of the form <prefix>YYYY-MM-DD-NNNN)."""
    numbers = []
    for value in ids:
        m = _DAY_NUMBER.search(value) if isinstance(value, str) else None
        if m is not None and m.group(1) == day:
            numbers.append(int(m.group(2)))
    return numbers


def order(value: str | None) -> tuple[str, int]:
    """An id (edit or pending) as (day, number), for comparing two; ("", 0) for none."""
    m = _DAY_NUMBER.search(value) if isinstance(value, str) else None
    return (m.group(1), int(m.group(2))) if m is not None else ("", 0)
