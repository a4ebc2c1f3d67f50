"""The writer's side of memory/forgotten.jsonl: a forget's keys and digests appended (add), and the
keys and digests the file lacks written back from the journal (mend).

The writer writes the keys the file lacks back to it, each on a line of its own, at start and at
the next forget (mend), so that the file alone holds every key again and the owner may delete a
damaged line without un-forgetting anything. A file that lacks only the newest forget's keys and
digests (each of its journal lines: it writes one per file it edits) while that forget's record
stands (data/unfinished.py) lost nothing: memoryd was killed between the forget's journal lines and
its lines here, so the start says that forget stopped part way and is to be run again (as bxctl
memory stats does), not that lines were lost; so is one whose record was removed, when the
journal's older lines or an export still hold its text (data/forgetstopped.py): the record is
written back from them first.

Why a module of its own: only the writer (a forget) and the start write the file; every reader
(recall, the indexer, a restore, an export) asks forgotten.py, which never writes.
"""

import json
import logging
from collections.abc import Iterable
from json.encoder import encode_basestring_ascii as _quoted  # json.dumps' own, for a str

from memoryd.data import unfinished
from memoryd.errors import AdminRefused
from memoryd.home import Home, append_lines
from memoryd.journal import forgetlines, forgetread, forgotten, forgottenlines
from memoryd.journal import forgottensaid as said
from memoryd.journal.forgotten import Forgot, path

# forgotten.py's logger: what is said of the file here are its lines, and keep its name.
log = logging.getLogger("memoryd.journal.forgotten")


def add(
    home: Home, keys: str | Iterable[str], when: str, edit: str, texts: Iterable[Forgot] = ()
) -> None:
    """Append a key (or each of keys), then the digests texts, each on a line of its own, in one
    write and one fsync (append_lines adds a newline first to a file whose last line lost it:
    glued onto that line, both keys would be lost). The keys come first, so that a crash that
    tears the write keeps no digest without its key (forgotten.alone()). On the writer, in a
    forget: a damaged or missing file gets the journal's keys back first (mend), once for the
    whole listing: a text tens of thousands of records hold is listed in one read of the file,
    not one per key."""
    mend(home, under_way=True)
    # json.dumps({"key": key, "time": when, "edit": edit}) to the byte, with its own quoting of a
    # string: a dumps a key took 0.6 s of the writer at 150,000 keys
    tail = f', "time": {_quoted(when)}, "edit": {_quoted(edit)}}}'
    lines = [f'{{"key": {_quoted(key)}{tail}' for key in _many(keys)]
    lines += [json.dumps(forgot.line()) for forgot in texts]
    append_lines(path(home), lines)


def own(home: Home) -> tuple[frozenset[str], frozenset[Forgot]]:
    """The keys and digests the file holds on whole lines (forgotten.held, held_texts), for a
    forget to append only those it lacks: the file alone is read, not the journal's forget lines
    again (add's mend reads them), nor what readers make of both."""
    try:
        parsed = forgottenlines.read(path(home))
    except FileNotFoundError:
        return frozenset(), frozenset()
    except OSError:  # a link or FIFO there: said and refused as a reader says it
        return forgotten.held(home), forgotten.held_texts(home)
    return frozenset(parsed.found), frozenset(parsed.texts)


def _many(keys: str | Iterable[str]) -> Iterable[str]:
    return (keys,) if isinstance(keys, str) else keys


def mend(home: Home, under_way: bool = False) -> None:
    """On the writer (or at start, before it runs): a file with a damaged line, or missing while
    the journal holds forget lines, gets the keys the journal's forget lines name that it lacks,
    each on a line of its own, so that the file alone holds every key again. under_way: a forget
    has written its journal lines and writes its own keys next; the digests of its earlier lines
    (one per file it edited) are written back here, unsaid. A whole file costs one read.
    At start, a forget that stopped part way (its record stands) is said in one line with the
    forget to run again, and the keys and digests of its journal line that it had not listed yet
    are written back as its own, never said as lines lost from the file."""
    stopped, rebuilt = (None, False) if under_way else _stopped_forget(home)
    if not _mend(home, under_way, stopped, rebuilt) and stopped is not None:
        said.part_way(path(home), stopped, 0, 0, None, rebuilt=rebuilt)


def _mend(
    home: Home, under_way: bool, stopped: unfinished.Unfinished | None, rebuilt: bool = False
) -> bool:
    """mend's work; whether it said the forget that stopped part way."""
    where = path(home)
    try:
        parsed = forgottenlines.read(where)  # a block of whole lines at a time, never whole
    except FileNotFoundError:
        parsed = None
    except OSError as e:  # a link or FIFO there: the start refuses it, a forget's add says it
        log.error("%s: not read to mend it: %s", where, e)
        return False
    there = parsed is not None
    found, damaged, found_texts = (
        (parsed.found, parsed.damaged, parsed.texts) if parsed is not None else (set(), [], set())
    )
    journal = forgetread.forgets(home)
    wanted = journal.keys - journal.last if under_way else journal.keys
    wanted_texts = journal.texts - journal.last_texts if under_way else journal.texts
    lacking = sorted(wanted - found)
    lacking_texts = sorted(wanted_texts - found_texts, key=lambda f: (f.time, f.digest))
    if there and not damaged and not lacking and not lacking_texts:
        return False
    error = None
    if lacking or lacking_texts:
        error = forgetlines.write_back(where, there, lacking, lacking_texts)
    written = 0 if error is not None else len(lacking) + len(lacking_texts)
    digests = 0 if error is not None else len(lacking_texts)
    if under_way and error is None and _own_lines(journal, lacking, lacking_texts, there, damaged):
        return False
    if stopped is not None and not damaged and _only_the_newest(journal, lacking, lacking_texts):
        # memoryd's own kill, between the forget's journal line and its lines here: not a file
        # removed, emptied or edited
        lacked = len(lacking) + len(lacking_texts)
        said.part_way(where, stopped, lacked, written, error, digests, rebuilt=rebuilt)
        return True
    if not there:
        if lacking or lacking_texts or journal.keyless:
            said.missing(where, journal, written, error, digests)
    elif not damaged:
        said.lacking(where, len(lacking) + len(lacking_texts), written, error, digests)
    elif written or error is not None:
        said.damaged(where, damaged, journal.keyless, written, error, digests)
    return False


def _stopped_forget(home: Home) -> tuple[unfinished.Unfinished | None, bool]:
    """The forget that stopped part way, or None; one whose record cannot be read is said by the
    forget and stats that meet it. And whether its record was gone: it is written back now,
    before this start lists its keys and digests, after which nothing but the record tells that
    the forget did not finish."""
    try:
        stopped = unfinished.read(home)
    except AdminRefused:
        return None, False
    if stopped is None or unfinished.path_of(home).exists():
        return stopped, False
    try:
        unfinished.record(home, stopped)
    except OSError as e:
        log.warning(
            "%s: a forget's record, made again from the journal, could not be written (%s); "
            "stats names the forget until this start lists its keys",
            unfinished.path_of(home),
            e.strerror or e,
        )
    return stopped, True


def _only_the_newest(journal: forgetlines.Forgets, keys: list[str], texts: list[Forgot]) -> bool:
    """Whether every key and digest the file lacks is the newest forget's (each of its journal
    lines, one per file it edited): what a forget stopped between those lines and its own lines
    here leaves."""
    return set(keys) <= journal.last and set(texts) <= journal.newest()


def _own_lines(
    journal: forgetlines.Forgets,
    keys: list[str],
    texts: list[Forgot],
    there: bool,
    damaged: list[int],
) -> bool:
    """Whether all a forget under way found lacking is its own earlier journal lines' digests
    (it lists only its last line's): written back as they are, nothing lost to say."""
    if damaged or (not there and journal.keyless):
        return False
    return _only_the_newest(journal, keys, texts)
