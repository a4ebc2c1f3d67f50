"""The marker: the text that replaces what was forgotten wherever memoryd held it. It says who and
when, and holds no hash (a short secret's hash can be guessed; the digests stay in
forgotten.jsonl and the journal's forget lines).

Why a module of its own: the notes of notes.md whose text is a marker tell which note keys still
hold (forgotten.keys), and the export, backup, import, stats and promote only need to know a
marker when they meet one, not what forgotten.jsonl lists.
"""

import logging
from pathlib import Path

from memoryd.data import notestream
from memoryd.home import Home, read_file
from memoryd.journal import forgetlines
from memoryd.journal.readcache import remember
from memoryd.memory import notes

# forgotten.py's logger: what is said of notes.md here is its line, and keeps its name.
log = logging.getLogger("memoryd.journal.forgotten")

MARKER_PREFIX = "[forgotten by the owner on "

_markers: dict[Path, tuple[forgetlines.Stamp, frozenset[int] | None]] = {}


def marker(when: str) -> str:
    """The text standing where forgotten text was; when is a UTC time to the minute."""
    return f"{MARKER_PREFIX}{when}]"


def is_marker(text: object) -> bool:
    return isinstance(text, str) and text.startswith(MARKER_PREFIX) and text.endswith("]")


def marker_notes(home: Home) -> frozenset[int] | None:
    """The numbers of the notes of notes.md whose text is a forget's marker; None when notes.md
    is there but cannot be read."""
    where = home.memory_file("notes.md")
    stamp = forgetlines.stamp(where)
    if stamp is None:
        return frozenset()
    cached = _markers.get(where)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    found: frozenset[int] | None = frozenset()
    try:
        data = read_file(where)
    except OSError as e:  # said once per change of the file, not at every recall
        log.warning("%s: not read to tell forgotten notes: %s", where, e)
        found = None
    else:
        if MARKER_PREFIX.encode() in data:  # no marker: no note to parse
            found = marker_numbers(data)
    remember(_markers, where, stamp, found)
    return found


def marker_numbers(data: bytes) -> frozenset[int]:
    """The numbers notes.parse gives the notes of data whose text is a marker, parsing only the
    notes that hold the marker's words. Parsing every note (each header's time checked) took
    3 s at 100,000 notes, on the reader of the first recall after each change of notes.md; this
    takes a tenth of that. The notes are cut where notes.parse starts one (data/notestream)."""
    prefix = MARKER_PREFIX.encode()
    found: set[int] = set()
    number = 0
    for start, piece in notestream.pieces([data]):
        if start and prefix not in piece:
            number += 1  # a note (every piece past the first is one) that holds no marker
            continue
        entries = notes.parse(piece, offset=start, number=number)
        if entries and is_marker(entries[0].text):
            found.add(number)
        number += len(entries)
    return frozenset(found)
