"""Whose turns a question is about: the one of the two speakers it names.

A question that names one speaker of a conversation ("When did Caroline go to the support
group?") is about what that speaker said, and the turn that answers is hers ("I went to a
support group yesterday"): it does not hold her name. The turns that do are the other speaker's,
who greets her ("Hey Caroline!"), and by words alone they outrank her own. So when a question
names one speaker, the rows of that speaker's role have their score raised by FAVOUR of itself
(favour()), in context and hybrid alike; every other row competes as before.

Which role a name belongs to is read from how the rows use it, not set by anyone: speakers
address each other by name ("Hey Caroline!", "Thanks, John.", "that's great, Mel!"), so a name
used as an address in at least MIN_ADDRESSED rows of one role, and DOMINANCE times as often as
in the other role's rows, names the other role. A name only spoken about ("I met Bob at work") is
no address and favours nothing; nor does a question that names both speakers, or a name the
rows never address. Only the newest SAMPLE rows holding the name are read (FTS5 reads a term's
rows newest first without sorting them), so the cost of a question stays the same however many
rows the index holds.
"""

import re
import sqlite3
from collections.abc import Mapping, MutableMapping

from memoryd.modes.arrange import Place
from memoryd.modes.stopwords import stopwords

ROLES = ("user", "assistant")
FAVOUR = 0.35
SAMPLE = 200
MIN_ADDRESSED = 3
DOMINANCE = 4
# The capitalised words of a question looked up, at most (each costs one read of SAMPLE rows).
MOST_NAMES = 4

_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?:-[A-Z][a-z]+)?\b")
# Words that open or close an address ("Hey Caroline!", "Thanks, John", "Wow Mel, ...").
_OPENERS = (
    "hey|hi|hello|hiya|yo|dear|thanks|thank you|cheers|congrats|congratulations|welcome|bye"
    "|goodbye|good morning|morning|good evening|evening|good night|sorry|wow|whoa|oh|aw|aww|ah"
    "|yeah|yes|no|sure|okay|ok|great|good|nice|awesome|cool|well|haha|hmm"
)
_NEWEST = (
    "SELECT s.role, h.text FROM hits h JOIN sources s ON s.rowid = h.rowid"
    " WHERE hits MATCH ? ORDER BY h.rowid DESC LIMIT ?"
)


def address(name: str) -> re.Pattern[str]:
    """Where a row addresses name: at a sentence's start, alone or after an opener, and set off
    by punctuation ("Caroline, ...", "Hey Caroline!"); after an opener anywhere ("thanks John");
    or after a comma at a sentence's end ("..., Caroline!")."""
    n = re.escape(name)
    return re.compile(
        rf"(?:^|[.!?]\s+)(?:(?i:{_OPENERS})\W{{0,2}}\s*)?{n}\s*[,!?.:]"
        rf"|\b(?i:{_OPENERS}),?\s+{n}\b"
        rf"|,\s*{n}\s*(?:[.!?]|$)",
        re.MULTILINE,
    )


def addressing(conn: sqlite3.Connection, name: str) -> dict[str, int]:
    """How many of the newest SAMPLE rows holding name address it, by the role of the row."""
    pattern = address(name)
    counts = dict.fromkeys(ROLES, 0)
    for role, text in conn.execute(_NEWEST, (f'"{name}"', SAMPLE)):
        if role in counts and text and pattern.search(text):
            counts[role] += 1
    return counts


def named_role(conn: sqlite3.Connection, question: str) -> str | None:
    """The role whose speaker the question names (the module docstring), or None. Runs inside
    the caller's read transaction."""
    found: set[str] = set()
    names = dict.fromkeys(
        word for word in _CAPITALISED.findall(question) if word.lower() not in stopwords()
    )
    for name in list(names)[:MOST_NAMES]:
        counts = addressing(conn, name)
        for role, other in (ROLES, ROLES[::-1]):
            # A name the other role addresses is this role's speaker.
            by_other = counts[other]
            if by_other >= MIN_ADDRESSED and by_other >= DOMINANCE * counts[role]:
                found.add(role)
    return found.pop() if len(found) == 1 else None


def favour(scores: MutableMapping[int, float], where: Mapping[int, Place], role: str) -> None:
    """Raise by FAVOUR of itself the score of each row of role (where: arrange.places)."""
    for rowid, score in scores.items():
        place = where.get(rowid)
        if place is not None and place.role == role and score > 0.0:
            scores[rowid] = score * (1.0 + FAVOUR)
