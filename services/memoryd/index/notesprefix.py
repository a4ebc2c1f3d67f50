"""A digest of every byte of notes.md the index has read: what lets the index read on from where
it stopped, after a change of notes.md's stat no write of memoryd's explains, only when those
bytes are provably unchanged.

A memoryd killed between a note's append and its catch-up leaves notes.md grown in place, and its
successor cannot know the append was its own (the stat of that write died with it); a chmod, a
chown or a touch changes notes.md's times and not one byte. Reading on from the offset, rather
than deleting every note row and reading 20,000 notes again for one new one, is right only when
each byte before the offset is the one the index read: an editor that wrote over a note far back
with as many bytes, then an entry appended, looks the same by inode, by growth and by the tail
window (indexer.NOTES_WINDOW). So the progress row keeps, beside the offset, a chained digest of
the whole BLOCK-sized blocks before it (each link the hash of the link before and of the block).
It is extended as the index reads on, reading only from the last whole block (at most BLOCK bytes
more than what is new), and checked by one sequential read of the file, without parsing it, only
at such a change, when the index would read on. The bytes after the last whole block lie within
the tail window, which is checked there as before.

The digest names the offset it was taken at: a progress row whose offset moved without it (a
forget that rewrote notes before the offset moves the offset, data/purge.shift_notes) has its
digest taken again from the file's start at the next save.

A digest that cannot be read (a damaged or hand-edited progress row: numbers past what an offset
can be, a block count no block gives) is none: the file's digest is taken again from its start,
and the row's damage is said once, naming the file it was kept for.
"""

import hashlib
import logging
import os
import re
from pathlib import Path

from memoryd.home import open_read
from memoryd.index.indexer import NOTES_WINDOW

# A whole block's bytes are chained; the bytes after the last one must lie in the tail window.
BLOCK = NOTES_WINDOW
READ = 1 << 20  # bytes read at a time
START = bytes(32)  # the link before the first block
# An offset fits in 64 bits: a longer number is no offset (and int() refuses one past 4,300 digits).
FORM = re.compile(r"([0-9]{1,19}):([0-9]{1,19}):([0-9a-f]{64})")

log = logging.getLogger(__name__)
_SAID: set[str] = set()  # the files whose damaged progress row was said
MOST_SAID = 100  # past this many files, no more is said: a row damaged in each is one cause


def damaged(path: Path) -> None:
    """Say, once for path, that the index's progress row kept for it holds a damaged digest."""
    name = os.fspath(path)
    if name in _SAID or len(_SAID) >= MOST_SAID:
        return
    _SAID.add(name)
    log.warning(
        "index: the progress row kept for %s holds a damaged digest of the bytes read: passed"
        " over, taken again from the file's start",
        path,
    )


def _parsed(prefix: str | None, path: Path) -> tuple[int, int, bytes] | None:
    """(offset the digest was taken at, bytes in whole blocks it covers, its last link); None
    when no digest is kept, or the one kept cannot be read (said once)."""
    if not prefix:
        return None
    found = FORM.fullmatch(prefix)
    if found is not None:
        at, whole = int(found[1]), int(found[2])
        if not (whole % BLOCK or whole > at):
            return at, whole, bytes.fromhex(found[3])
    damaged(path)
    return None


def _chain(path: Path, link: bytes, start: int, end: int) -> bytes | None:
    """link carried over the whole blocks of notes.md from start to end (both block bounds);
    None when the file no longer holds them all."""
    pending = b""
    with open_read(path) as f:
        f.seek(start)
        left = end - start
        while left > 0:
            data = f.read(min(left, READ))
            if not data:
                return None
            left -= len(data)
            pending += data
            at = 0
            while len(pending) - at >= BLOCK:
                link = hashlib.sha256(link + pending[at : at + BLOCK]).digest()
                at += BLOCK
            pending = pending[at:]
    return link


def extend(path: Path, prefix: str | None, first: int, offset: int) -> str | None:
    """The digest for notes.md read to offset, from prefix, the one kept when the index held it
    to first (taken again from the start when prefix is of another offset or none); None when
    the file no longer holds the bytes (the next look reads it again from its start)."""
    was = _parsed(prefix, path)
    whole, link = (0, START) if was is None or was[0] != first or was[1] > offset else was[1:]
    end = offset - offset % BLOCK
    try:
        carried = _chain(path, link, whole, end)
    except OSError:
        return None
    return None if carried is None else f"{offset}:{end}:{carried.hex()}"


def holds(path: Path, prefix: str | None, offset: int, quiet: bool = True) -> bool:
    """True when notes.md's whole blocks before offset are the bytes the digest was taken of
    (one read of them, no parsing); False when no digest of offset is kept (an index written
    before it was) or the file cannot be read (quiet; else its OSError is raised: the indexer
    does not take a file it cannot read now for one whose bytes changed)."""
    was = _parsed(prefix, path)
    if was is None or was[0] != offset:
        return False
    try:
        return _chain(path, START, 0, was[1]) == was[2]
    except OSError:
        if quiet:
            return False
        raise
