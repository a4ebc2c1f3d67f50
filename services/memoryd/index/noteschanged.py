"""Whether notes.md, its stat changed with no write of memoryd's to explain it, is still the file
the index read: every byte before the index's offset the one read.

notes.md's stat changes for many causes that keep those bytes: an append, memoryd's own whose
stat died with a killed process or the owner's; a chmod, chown or touch, which change its times
alone; a home copied or moved with cp -a, which gives it another inode. The index reads on from
its offset after those, and reads notes.md again from its start after any other change (an edit
anywhere before the offset). These tell the two apart from the stats (indexer.file_of whole:
device, inode, size and times) and the digest of the bytes read (notesprefix.py).
"""

from pathlib import Path

from memoryd.index import notesprefix
from memoryd.index.sessionrows import LogState


def appended_to(read: str | None, now: str | None) -> bool:
    """Whether notes.md (file_of whole, now) is the file the index read (read) grown since: the
    same inode, longer. Anything else that changed its stat, an editor writing over it in place
    with as many bytes, say, is not an append, however far back from the window it changed."""
    old, new = str(read).split(":"), str(now).split(":")
    if len(old) < 3 or len(new) < 3 or old[:2] != new[:2]:
        return False
    return int(new[2]) > int(old[2])


def times_alone(read: str | None, now: str | None) -> bool:
    """Whether notes.md (file_of whole, now) differs from the file the index read (read) in its
    times alone: the same device, inode and size (a chmod, a chown or a touch changed no byte;
    an editor that wrote as many bytes over it is caught by the digest)."""
    old, new = str(read).split(":"), str(now).split(":")
    return len(old) >= 3 and old[:3] == new[:3]


def holds_read(path: Path, state: LogState, file: str | None) -> bool:
    """Whether notes.md, whose stat changed since the index read it with no write of memoryd's
    to explain it, is still the file read, every byte before the offset the one read: the same
    inode, grown (appended_to) or its times alone changed (times_alone), the digest of the
    bytes read the same (one read of them, only here; the tail window is checked by the
    caller); or another inode at least as long (copied), the digest the same: a home copied or
    moved. An OSError reading it is raised: a file that cannot be read is not a changed one."""
    moved = copied(state.file, file, state.bytes)
    if not (appended_to(state.file, file) or times_alone(state.file, file) or moved):
        return False
    return notesprefix.holds(path, state.prefix, state.bytes, quiet=False)


def copied(read: str | None, now: str | None, offset: int) -> bool:
    """Whether notes.md (file_of whole, now) is another file than the index read (read), at least
    as long as the offset: a home copied or moved with cp -a, which keeps every byte and gives a
    new inode. Only the digest of the bytes read tells it from an edit."""
    old, new = str(read).split(":"), str(now).split(":")
    return len(old) >= 3 and len(new) >= 3 and old[:2] != new[:2] and int(new[2]) >= offset
