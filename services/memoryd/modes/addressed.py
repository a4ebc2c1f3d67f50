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
rows newest first without sorting them), and of each only its first HEAD and last TAIL bytes,
where an address stands (in SQL, as search/textcut.py reads a snippet, not by blob I/O), so the
cost of a question stays the same however many rows the index holds and however long they are.
context and hybrid keep what they read of each name (Speakers, one per open index) while the
newest row holding it is the same (kept.py): a row added that holds the name, or any deletion,
has it read again at the next question naming it, so what is kept is always what a memoryd just
started would read. At a million rows a name's reads cost 2 ms, the look at its newest row
0.2 ms for a name held by half the rows.
"""

import re
import sqlite3
from collections.abc import Mapping, MutableMapping

from memoryd.modes import person
from memoryd.modes.arrange import Place
from memoryd.modes.kept import Kept, lineage
from memoryd.modes.stopwords import stopwords

ROLES = ("user", "assistant")
FAVOUR = 0.35
SAMPLE = 200
MIN_ADDRESSED = 3
DOMINANCE = 4
# The capitalised words of a question looked up, at most (each costs one read of SAMPLE rows).
MOST_NAMES = 4
HEAD = 2_000
TAIL = 400
MOST_KEPT = 2_000

_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)?")
# Words that open or close an address ("Hey Caroline!", "Thanks, John", "Wow Mel, ...").
_OPENERS = (
    "hey|hi|hello|hiya|yo|dear|thanks|thank you|cheers|congrats|congratulations|welcome|bye"
    "|goodbye|good morning|morning|good evening|evening|good night|sorry|wow|whoa|oh|aw|aww|ah"
    "|yeah|yes|no|sure|okay|ok|great|good|nice|awesome|cool|well|haha|hmm"
)
# A row's type, first bytes and last TAIL bytes (bytes, not characters: the value as a blob).
_ENDS = (
    "SELECT typeof(c0), substr(CAST(c0 AS BLOB), 1, ?), substr(CAST(c0 AS BLOB), -?)"
    " FROM hits_content WHERE id = ?"
)
_NEWEST = (
    "SELECT h.rowid, s.role FROM hits h JOIN sources s ON s.rowid = h.rowid"
    " WHERE hits MATCH ? ORDER BY h.rowid DESC LIMIT ?"
)
# The newest row holding a name: what a kept reading of it is stamped with.
_NEWEST_ONE = "SELECT rowid FROM hits WHERE hits MATCH ? ORDER BY rowid DESC LIMIT 1"


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
    for rowid, role in conn.execute(_NEWEST, (f'"{name}"', SAMPLE)).fetchall():
        if role in counts and pattern.search(ends(conn, rowid)):
            counts[role] += 1
    return counts


def ends(conn: sqlite3.Connection, rowid: int) -> str:
    """A row's text, or its first HEAD and last TAIL bytes when it is longer; "" for a row that
    holds no text (NULL or a number, written by hand)."""
    row = conn.execute(_ENDS, (HEAD + TAIL + 1, TAIL, rowid)).fetchone()
    if row is None or row[0] not in ("text", "blob"):
        return ""
    head, tail = row[1] or b"", row[2] or b""  # substr of an empty value is NULL
    if len(head) <= HEAD + TAIL:
        return head.decode("utf-8", errors="replace")
    # A cut may split a character: it becomes one replacement character at the cut.
    return (
        head[:HEAD].decode("utf-8", errors="replace")
        + "\n"
        + tail.decode("utf-8", errors="replace")
    )


class Speakers:
    """addressing() of each name, kept across questions; one per index, shared by its readers."""

    def __init__(self) -> None:
        self._known: Kept[dict[str, int]] = Kept(MOST_KEPT)

    def clear(self) -> None:
        self._known.clear()

    def addressing(self, conn: sqlite3.Connection, name: str) -> dict[str, int]:
        """addressing(conn, name), kept under memoryd's lineage and the newest row holding the
        name: within a lineage rows are only added, each above the last, so while that row is
        the same the newest SAMPLE rows holding the name are too (never kept in a state memoryd
        did not make)."""
        now = lineage(conn)
        stamp = None
        if now is not None:
            newest = conn.execute(_NEWEST_ONE, (f'"{name}"',)).fetchone()
            stamp = (now, None if newest is None else newest[0])
        return self._known.get(name, stamp, lambda: addressing(conn, name))


def named_role(
    conn: sqlite3.Connection, question: str, known: Speakers | None = None
) -> str | None:
    """The role whose speaker the question names (the module docstring), or None; known keeps
    what was read of each name. Runs inside the caller's read transaction."""
    found: set[str] = set()
    names = dict.fromkeys(
        word
        for word in _WORD.findall(question)
        # A name is capitalised; "I" and acronyms ("LGBTQ") are not names.
        if word[0].isupper() and not word.isupper() and word.lower() not in stopwords()
    )
    for name in list(names)[:MOST_NAMES]:
        counts = addressing(conn, name) if known is None else known.addressing(conn, name)
        for role, other in (ROLES, ROLES[::-1]):
            # A name the other role addresses is this role's speaker.
            by_other = counts[other]
            if by_other >= MIN_ADDRESSED and by_other >= DOMINANCE * counts[role]:
                found.add(role)
    return found.pop() if len(found) == 1 else None


def asked_role(
    conn: sqlite3.Connection, question: str, known: Speakers | None = None
) -> str | None:
    """The role a question asks about: the speaker it names, else its grammatical person
    (person.py)."""
    return named_role(conn, question, known) or person.role(question)


def favour(
    scores: MutableMapping[int, float],
    where: Mapping[int, Place],
    role: str,
    share: float | None = None,
) -> None:
    """Raise by share of itself (FAVOUR unless a sweep gives another) the score of each row of
    role (where: arrange.places)."""
    raise_by = FAVOUR if share is None else share
    for rowid, score in scores.items():
        place = where.get(rowid)
        if place is not None and place.role == role and score > 0.0:
            scores[rowid] = score * (1.0 + raise_by)
