"""A forget stopped part way whose record (memory/.forgetting.json, unfinished.py) is gone, found
from the journal and the exports.

A forget writes its record, then the files and its journal line, then scrubs the journal's older
lines, the recall log, pending writes and the exports, and only then lists the digests of the
texts it took in forgotten.jsonl. Killed in between, its record is what says it stopped; with the
record removed (a hidden file that looks like junk), nothing did: `bxctl memory log` lists the
forget as done, while `show` of an older edit and an export still print the text.

What is left says it all the same: the newest forget line's digests are not yet listed in
forgotten.jsonl (the gate, two reads memoryd keeps cheap), and a journal line before it, or an
export, still holds a text with one of those digests, which a finished forget replaces with its
marker. Only then are those lines read (a chunk of the journal at a time, each line parsed), and
the record is made from what they hold: the text, the forget's id and the keys its line lists, so
that stats names the forget and forget finishes it by the text's words, as when the record stood.
The answer is kept while the files it read are unchanged (and forgotten.jsonl lists no more),
so that stats, recall and the indexer, which ask unfinished.read, do not read them again.
"""

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from memoryd.data import exportfiles, exportmd, matching, notestream
from memoryd.data.unfinished import Unfinished
from memoryd.home import MONTH_FILE, Home, open_read
from memoryd.journal import forgetlines, forgetread, forgotten, forgottenlines
from memoryd.journal.forgetlines import Forgot, stamp
from memoryd.journal.wholelines import WholeLines
from proto.jsonread import loads_or_none

log = logging.getLogger(__name__)

CHUNK = 1 << 20  # journal bytes read at a time

_lock = threading.Lock()
_kept: dict[Path, tuple[tuple, Unfinished | None]] = {}  # per home: (what it read, the answer)
_listing: dict[Path, tuple[object, frozenset[Forgot]]] = {}  # forgotten.jsonl: (stamp, digests)


def lost(home: Home) -> Unfinished | None:
    """The forget the journal's newest forget line names, as its record held it, when that forget
    stopped before it finished taking its text out of the journal and the exports; else None."""
    last = forgetread.forgets(home).last_texts
    if not last:
        return None
    unlisted = last - _listed(home)
    if not unlisted:
        return None  # listed once the scrub was done: the forget got past it
    wanted = {f.digest for f in unlisted}
    ident = next(iter(unlisted)).edit
    seen = (frozenset(unlisted), *_stamps(home))
    with _lock:
        kept = _kept.get(home.memory)
        if kept is not None and kept[0] == seen:
            return kept[1]
    found = _found(home, ident, wanted)
    with _lock:
        _kept.clear()  # one home per memoryd; tests make many
        _kept[home.memory] = (seen, found)
    return found


def _listed(home: Home) -> frozenset[Forgot]:
    """The digests forgotten.jsonl itself lists (a block of whole lines at a time, never whole),
    read again only when it changed. Read here, not through forgotten.py's reader, which says
    what it finds wrong with the file: the start's mend says that once, after asking this."""
    where = forgotten.path(home)
    seen = stamp(where)
    with _lock:
        kept = _listing.get(where)
        if kept is not None and kept[0] == seen:
            return kept[1]
    try:
        listed = frozenset(forgottenlines.read(where).texts) if seen is not None else frozenset()
    except FileNotFoundError:
        listed = frozenset()
    except OSError:  # said where forgotten.jsonl is read; nothing here to tell it by
        return frozenset(forgetread.forgets(home).last_texts)
    with _lock:
        _listing.clear()
        _listing[where] = (seen, listed)
    return listed


def _stamps(home: Home) -> tuple:
    """What tells whether the files read changed: each month's inode (an append, which every
    write makes, leaves the lines before the forget line as they were; a forget's rewrite is a
    new file), and each export's inode, size and time."""
    months = tuple((p.name, _inode(p)) for p in _months(home))
    return months, tuple((p.name, stamp(p)) for p in exportfiles.exports(home))


def _inode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_ino
    except OSError:
        return None


def _months(home: Home) -> list[Path]:
    try:
        return [home.edits / n for n in sorted(os.listdir(home.edits)) if MONTH_FILE.match(n)]
    except OSError:
        return []


def _found(home: Home, ident: str, wanted: set[str]) -> Unfinished | None:
    texts: dict[str, str] = {}  # digest: text
    line: dict | None = None
    for value in _lines_before(home, ident):
        if value.get("id") == ident:
            line = value
            break
        for text in _strings(value):
            for d in forgetlines.digests_of(text):
                if d in wanted and d not in texts and matching.journal_holds(value, text):
                    texts[d] = text
    if line is None:
        return None  # the forget line is not in the months read: nothing to tell by
    if len(texts) < len(wanted):
        for text in _export_texts(home):
            for d in forgetlines.digests_of(text):
                if d in wanted and d not in texts:
                    texts[d] = text
    if not texts:
        return None
    forgot = line.get("forgot")
    forgot = forgot if isinstance(forgot, dict) else {}
    keys = [k for k in forgot.get("keys") or [] if isinstance(k, str)]
    given = forgot.get("id")
    given = given if isinstance(given, str) else "text"
    said = list(texts.values())
    return Unfinished(said[0], given, _what(line, given), said, keys)


def _what(line: dict, given: str) -> str:
    """The forget as stats names it (never its text)."""
    if line.get("file") in ("memory.md", "user.md"):
        return f"an entry of {line['file']}"
    if line.get("to") == "notes.md":
        return "a note of notes.md"
    if given.startswith("session:"):
        return f"{given} (a session record)"
    return "a text"


def _lines_before(home: Home, ident: str) -> Iterator[dict]:
    """The journal's lines, parsed, oldest first, up to and with the line ident."""
    for path in _months(home):
        try:
            f = open_read(path)
        except OSError:
            continue  # a month that cannot be read is said by the journal's readers
        with f:
            for data, cut in WholeLines(f, os.fstat(f.fileno()).st_size, CHUNK):
                for raw in data[:cut].split(b"\n"):
                    value = loads_or_none(raw)
                    if isinstance(value, dict):
                        yield value


def _strings(value: object) -> Iterator[str]:
    """Every string a line holds, at any depth: matching.journal_holds then says whether it is
    held where forget takes a text from."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def _export_texts(home: Home) -> Iterator[str]:
    """The texts of the items of every export in backups/ (a jsonl item's text, a markdown
    export's blocks, cut as a forget's scrub cuts them)."""
    for path in exportfiles.exports(home):
        try:
            if path.suffix == ".jsonl":
                with open_read(path) as f:
                    for data, cut in WholeLines(f, os.fstat(f.fileno()).st_size, CHUNK):
                        for raw in data[:cut].split(b"\n"):
                            item = loads_or_none(raw)
                            if isinstance(item, dict) and isinstance(item.get("text"), str):
                                yield item["text"]
            else:  # as long as notes.md: a chunk read at a time, a part held at a time
                with open_read(path) as f:
                    yield from exportmd.texts(notestream.file_chunks(f, exportmd.CHUNK))
        except OSError:
            continue
