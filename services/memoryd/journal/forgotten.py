"""memory/forgotten.jsonl: the keys of the records the owner made memoryd forget, never their text.

A key is note:N (the Nth entry of notes.md, whose text forget replaced with the marker) or
session:ID:N (record N of a session's log, which is loopd's and keeps its text). A forget also
lists the digest of each text it took ({"digest", "time", "edit"}, forgetlines.Forgot): an entry
has no key, and a note's key names a place in one notes.md, so only the digest lets a restore of
an older archive or an import of an older export recognise what the owner forgot and leave it
out. The indexer skips every session record's row that holds a listed text (by its digest, on
forget's own terms: data/matching.py), so a catch-up, a reindex or a restore never puts the text
back into the index, not even from a log the forget could not read then. A session key outlives
its log (the owner clears old logs, or moves to a new machine), and a new log of the same session
name says other things under that number: so a key keeps a row out whatever its text only when
its forget listed no digest of what it took (alone()); else the row goes when it holds what was
taken (held_under_key), and the rest of it is indexed and recalled (hiding(), rows_condition()). No
clock can tell a record said before the forget from one said after (loopd's and memoryd's may
differ, a log may come from another machine), so the text stays out of the index from every log;
the owner who wants it remembered again writes it as a memory (a note or an entry is indexed from
notes.md and memory.md, which this check does not touch).

A note key names a position, and the owner may edit notes.md by hand (delete the marker, or a note
before it), after which another, live note stands at that position. So a note key holds only while
the forget's marker still stands there (keys); what the file lists is listed.

The forget's journal line holds the keys it lists too (forget.py), and they are always taken as
well as the file's (forgetlines.py reads the journal): nothing un-forgets a key. A line of this
file that does not parse (a torn append, a damaged block, a hand edit), lines lost from a file
that still parses (emptied, a line deleted), or the file missing (removed, or left out of a copy
of memory/) while the journal holds forget lines, is logged once. The writer writes the keys the
file lacks back to it (forgottenwrite.py), and the text that replaces what was forgotten is the
marker (forgottenmarker.py). Forget lines an older memoryd wrote name no keys: the log line says
which, as the journal cannot give theirs back.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ForgottenUnreadable
from memoryd.home import Home
from memoryd.journal import forgetlines, forgetread, forgottenlines
from memoryd.journal import forgottensaid as said
from memoryd.journal.forgottenmarker import marker_notes
from memoryd.journal.readcache import CACHED_MOST, remember

KEY = forgetlines.KEY
Forgot = forgetlines.Forgot
digest = forgetlines.digest
digests_of = forgetlines.digests_of
text_listed = forgetlines.text_listed
Stamp = forgetlines.Stamp

FILE = "forgotten.jsonl"


def path(home: Home) -> Path:
    return home.memory_file(FILE)


@dataclass(frozen=True)
class _Read:
    every: frozenset[str]
    notes: frozenset[int]  # the numbers of the note keys among them
    own: frozenset[str]  # the keys on whole lines of the file itself
    texts: frozenset[Forgot] = frozenset()  # every digest listed (the journal's too, as keys)
    own_texts: frozenset[Forgot] = frozenset()
    digests: frozenset[str] = frozenset()  # of texts, the digests alone (the indexer's check)
    # The keys that name what was forgotten by themselves: every note key, and each session key
    # some forget listed without a digest line of the same forget beside it (alone()).
    alone: frozenset[str] = frozenset()


_cache: dict[Path, tuple[tuple[Stamp, forgetlines.Forgets], _Read]] = {}


def listed(home: Home) -> frozenset[str]:
    """Every key the file lists (and, when a line of it is damaged or it is missing, every key
    the journal's forget lines name); read again only when the file changed (the indexer asks
    per part)."""
    return _read(home).every


def alone(home: Home) -> frozenset[str]:
    """The keys that keep a row out of the index whatever its text: every note key, and each
    session key that a forget listed without the digests of what it took. A forget writes the
    digest of every text it takes on lines sharing its key lines' edit and time, and a row
    holding one of those texts is left out by its digest (digests()), from whatever log; so such
    a key adds nothing, while dropping by it would drop what a new log of the same session name
    (a move to a new machine, old logs cleared) says under that number. The keys this cannot
    vouch for stay: a key line with no digest line of its forget (an older memoryd's, a forget
    that took no text, one stopped between the two), one written back from the journal or
    carried over by a restore (their lines name no forget's edit), any key the file lacks."""
    return _read(home).alone


def held(home: Home) -> frozenset[str]:
    """The keys the file itself holds on whole lines, never the journal's: a forget appends each
    of its keys not among them, so that none is held only through the journal."""
    return _read(home).own


def texts(home: Home) -> frozenset[Forgot]:
    """The digests of every text the owner made memoryd forget, as listed() gives keys."""
    return _read(home).texts


def digests(home: Home) -> frozenset[str]:
    """The digests alone of texts(): a session record whose text is one of them is never
    indexed, from whatever log, whenever it is read (matching.holds_forgotten)."""
    return _read(home).digests


def held_texts(home: Home) -> frozenset[Forgot]:
    """The digests the file itself holds on whole lines, as held() gives keys."""
    return _read(home).own_texts


_NONE = _Read(frozenset(), frozenset(), frozenset())


def _read(home: Home) -> _Read:
    """The file's keys; a reader never writes (the writer mends: mend)."""
    where = path(home)
    stamp = forgetlines.stamp(where)
    if stamp is None:
        return _missing(home, where)
    journal = forgetread.forgets(home)  # the same object while the journal is unchanged
    cached = _cache.get(where)
    if cached is not None and cached[0][0] == stamp and cached[0][1] is journal:
        return cached[1]
    try:
        parsed = forgottenlines.read(where)  # a block of whole lines at a time, never whole
    except FileNotFoundError:
        return _missing(home, where)  # removed since its stamp was taken
    except OSError as e:
        said.unreadable(where, e)
        raise ForgottenUnreadable(e, str(where)) from None
    own, own_texts = frozenset(parsed.found), parsed.texts
    if parsed.damaged:
        said.damaged(where, parsed.damaged, journal.keyless, 0, None)
    else:
        lacking = _lacking(journal, own, own_texts)
        if lacking:
            said.lacking(where, lacking, 0, None)
    # The journal's keys always count: a file that parses whole may still have lost lines (emptied
    # by a bad disk or a hand edit, a line deleted), and nothing un-forgets a key.
    every, every_texts = own | journal.keys, frozenset(own_texts) | journal.texts
    alone = every - parsed.vouched
    result = _made(every, own, every_texts, frozenset(own_texts), alone)
    remember(_cache, where, (stamp, journal), result)
    return result


def _lacking(journal: forgetlines.Forgets, own: frozenset[str], own_texts: set[Forgot]) -> int:
    """How many keys and digests the journal's forget lines name that the file lacks, the last
    forget's aside: it writes its journal lines first (one per file it edits), then its lines
    here."""
    keys = journal.keys - journal.last - own
    texts = journal.texts - journal.newest() - own_texts
    return len(keys) + len(texts)


def _made(
    every: frozenset[str],
    own: frozenset[str],
    texts: frozenset[Forgot] = frozenset(),
    own_texts: frozenset[Forgot] = frozenset(),
    alone: frozenset[str] | None = None,
) -> _Read:
    numbers = frozenset(int(k.removeprefix("note:")) for k in every if k.startswith("note:"))
    digests = frozenset(f.digest for f in texts)
    return _Read(every, numbers, own, texts, own_texts, digests, every if alone is None else alone)


def _missing(home: Home, where: Path) -> _Read:
    """No file: what the journal's forget lines name is kept forgotten. A home where nothing was
    ever forgotten has neither, and costs a stat of each journal month (forgetlines.py)."""
    journal = forgetread.forgets(home)
    if not journal.keys and not journal.texts:
        return _NONE
    # else the first forget, under way, makes the file
    if journal.keys - journal.last or journal.texts - journal.newest():
        said.missing(where, journal, 0, None)
    return _made(journal.keys, frozenset(), journal.texts)


def journal_keys(home: Home) -> set[str]:
    """The keys the journal's forget lines name (forgetlines.py)."""
    return set(forgetread.forgets(home).keys)


# The keys in force, per file, for the file's read and notes.md's markers they were made from.
_in_force: dict[Path, tuple[_Read, frozenset[int], frozenset[str]]] = {}


def keys(home: Home) -> frozenset[str]:
    """The keys in force: every session key listed, and each note key listed while its note in
    notes.md still holds a forget's marker (a hand edit that renumbered the notes put another
    note there, which was never forgotten). notes.md is looked at only when a note key is
    listed, and read again only when it changed."""
    read = _read(home)
    if not read.notes:
        return read.every
    standing = marker_notes(home)
    if standing is None:  # notes.md cannot be read: every note key listed holds
        return read.every
    where = path(home)
    made = _in_force.get(where)
    if made is not None and made[0] is read and made[1] is standing:
        return made[2]
    result = read.every - {note_key(n) for n in read.notes - standing}
    if where not in _in_force and len(_in_force) >= CACHED_MOST:
        _in_force.clear()
    _in_force[where] = (read, standing, result)
    return result


def session_key(session: str, record: int) -> str:
    return f"session:{session}:{record}"


def note_key(number: int) -> str:
    return f"note:{number}"


NOTE_KINDS = "kind IN ('noted', 'moved', 'dropped')"


def condition(listed: frozenset[str] | set[str]) -> tuple[str, tuple] | None:
    """The index's sources rows of the keys listed, as one WHERE clause with bound values (the
    keys travel as JSON, never in the SQL); None for no keys. A rebuilt index is swapped in only
    after its rows of these keys are gone: a forget during the build may follow the build's read."""
    sessions = sorted(k.removeprefix("session:") for k in listed if k.startswith("session:"))
    numbers = sorted(int(k.removeprefix("note:")) for k in listed if k.startswith("note:"))
    parts, params = [], []
    if sessions:
        parts.append(
            "(kind = 'session' AND session || ':' || record IN (SELECT value FROM json_each(?)))"
        )
        params.append(json.dumps(sessions))
    if numbers:
        parts.append(f"({NOTE_KINDS} AND record IN (SELECT value FROM json_each(?)))")
        params.append(json.dumps(numbers))
    if not parts:
        return None
    return " OR ".join(parts), tuple(params)
