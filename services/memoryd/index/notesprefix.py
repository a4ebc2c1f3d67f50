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
"""

import hashlib
import re
from pathlib import Path

from memoryd.home import open_read
from memoryd.index.indexer import NOTES_WINDOW

# A whole block's bytes are chained; the bytes after the last one must lie in the tail window.
BLOCK = NOTES_WINDOW
READ = 1 << 20  # bytes read at a time
START = bytes(32)  # the link before the first block
FORM = re.compile(r"([0-9]+):([0-9]+):([0-9a-f]{64})")


def _parsed(prefix: str | None) -> tuple[int, int, bytes] | None:
    """(offset the digest was taken at, bytes in whole blocks it covers, its last link)."""
    found = FORM.fullmatch(prefix or "")
    if found is None:
        return None
    at, whole = int(found[1]), int(found[2])
    if whole % BLOCK or whole > at:
        return None
    return at, whole, bytes.fromhex(found[3])


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
    was = _parsed(prefix)
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
    was = _parsed(prefix)
    if was is None or was[0] != offset:
        return False
    try:
        return _chain(path, START, 0, was[1]) == was[2]
    except OSError:
        if quiet:
            return False
        raise
