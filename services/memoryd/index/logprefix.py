"""A digest of every byte of a session log the index has read, so that a log that is another
file now only by its device and inode (a home copied or moved with `cp -a`, sessions/ copied back
after a restore, a move to a new disk) is read on from its offset rather than again from its
start.

The index tells a log read from another file by its inode (indexer.file_of): an editor's save
or sed -i gives the log a new one, and what it changed may lie anywhere before the offset, far
before the tail hash's window. But a copy gives every log a new inode with not a byte changed, and
reading every log again costs a home of a million records minutes of catch-up, every memory write
waiting meanwhile. So beside the offset the progress row keeps notes.md's chained digest of the
whole blocks before it (notesprefix.py: extended as the index reads on, reading only from the last
whole block) and the hash of the bytes from the last whole block to the offset. A log whose inode
changed is read on only when one sequential read of it, without parsing, shows both the same;
a log shorter than the offset, or with any other byte before it, is read again as before.

A log whose progress has no digest (an index written before it was kept, a log read again whose
end was not reached, a progress row damaged: notesprefix.py says it) is read again at such a
change, as before.
"""

import hashlib
from pathlib import Path

from memoryd.home import open_read

# notesprefix.py takes its block from the indexer, which reads this module: imported when used.


def _rest(path: Path, start: int, end: int) -> str | None:
    """The hash of the bytes from start to end, None when the file no longer holds them."""
    digest = hashlib.sha256()
    with open_read(path) as f:
        f.seek(start)
        data = f.read(end - start)
    if len(data) != end - start:
        return None
    digest.update(data)
    return digest.hexdigest()


def _split(prefix: str | None, path: Path) -> tuple[str, str] | None:
    """(notesprefix's digest, the hash of the bytes after its whole blocks) from a kept prefix;
    None when none is kept, or the one kept is damaged (said once, as notesprefix says it)."""
    from memoryd.index import notesprefix

    if not prefix:
        return None
    chain, _, rest = prefix.rpartition(":")
    if chain and len(rest) == 64:
        return chain, rest
    notesprefix.damaged(path)
    return None


def extend(path: Path, prefix: str | None, first: int, offset: int) -> str | None:
    """The digest of the log read to offset, from prefix, kept when the index held it to first
    (taken again from the start when prefix is of another offset or none); None when the file
    no longer holds the bytes or cannot be read (the log is then read again at a move)."""
    from memoryd.index import notesprefix

    was = _split(prefix, path)
    try:
        chain = notesprefix.extend(path, was[0] if was else None, first, offset)
        if chain is None:
            return None
        rest = _rest(path, offset - offset % notesprefix.BLOCK, offset)
    except OSError:
        return None
    return None if rest is None else f"{chain}:{rest}"


def holds(path: Path, prefix: str | None, offset: int) -> bool:
    """True when every byte of the log before offset is one the digest was taken of (one read of
    them); False when no digest of offset is kept or the file cannot be read."""
    from memoryd.index import notesprefix

    was = _split(prefix, path)
    if was is None or not notesprefix.holds(path, was[0], offset):
        return False
    try:
        return _rest(path, offset - offset % notesprefix.BLOCK, offset) == was[1]
    except OSError:
        return False
