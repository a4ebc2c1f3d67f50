"""What notes.md was when the index last read it: its stat (device, inode, size, times).

The owner may edit notes.md by hand, and the index reads it only when asked to. A recall compares
notes.md's stat with the one taken when the writer last read it (one stat, nothing more when
nothing changed) and, when they differ, has the writer catch the index up first (service.py), so
that recall and search answer from notes.md as it is. Forget compares it with the stat of the last
read that succeeded: a note number given while the index was behind notes.md may name another
note than the one search showed, and forget refuses it (data/targets.py). So it does a number no
search or stats printed since the index last read notes.md again from its start (renumbered: a
hand edit before the end moves the numbers after it): a recall in between catches the index up,
and the number printed before would then name the note that moved into its place. Each number
counts on its own (printed): a search that printed other notes, or none, makes no number current.

The numbers a search printed before memoryd started are not known to be current (notes.md may
have been edited and read again from its start in between), so after a start every note number
counts as not printed until a search or stats of this memoryd prints it.

notes.md that only grew since the index read it (memoryd's own append, which the writer indexes
next) holds every note under the number it had: the same file, at least as long as what the index
read, every byte before the offset the index reached unchanged (the hash the indexer keeps of the
NOTES_WINDOW bytes just before it, indexer.py, and the chained digest of the whole blocks before
those, notesprefix.py: an edit far back that keeps the size, plus an append, changes no byte of
the window). Forget and promote take a number then; checking it costs one read of what the index
read (about 0.1 s at 200,000 notes), only when the stat changed, once for each new stat.

The stat is taken before the read, so a change made while the writer reads is seen at the next
look. The catch-up it sets off does not trust the tail hash alone: notes.md whose stat is not the
one the index read, nor the one memoryd's own write began from, is read on only when the digest
of every byte read shows them unchanged (a chmod, a touch, an append: notesparts.py), and else
read again from its start, and so counted renumbered, whatever the edit kept (its size, bytes
near the end); so is one changed while memoryd was stopped, at the catch-up after the start.
"""

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from memoryd.index import notesprefix
from memoryd.index.indexer import NOTES_WINDOW
from proto.files import open_file

Seen = tuple[object, ...]
# The note numbers kept as printed: an owner prints far fewer between two hand edits.
PRINTED_MOST = 100_000
# What the index read of notes.md: notes.md's stat before the read, the byte offset the index
# reached, the hash of the NOTES_WINDOW bytes before it and the digest of the whole blocks
# before that offset (notesprefix.py) (None: not known).
Read = tuple[Seen, int | None, str | None, str | None]


def stat_of(path: Path) -> Seen:
    """notes.md's stat as compared: a missing or unreadable file is a state of its own."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return ("missing",)
    except OSError as e:
        return ("unreadable", e.errno)
    return (st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class NotesSeen:
    def __init__(self, path: Path) -> None:
        self.path = path
        # What the writer last read into the index and committed (None: nothing since the index
        # opened): notes.md's stat, the offset reached and its tail hash, kept together so that a
        # reader never pairs one read's stat with another's offset.
        self._read: Read | None = None
        # notes.md's stat when the writer last tried to read it, whether or not that succeeded.
        self.tried: Seen | None = None
        # How many times the index read notes.md again from its start, and for each note number
        # a search or stats printed (owner/search.py, owner/stats.py) that count when it did:
        # none yet after a start. Only a number printed since the last reading from the start
        # may be taken by forget or promote.
        self.renumbered = 0
        self.printed: dict[int, int] = {}
        # The last (read, stat) found to have only grown: a reader asking again reads nothing.
        self._grown: tuple[Read, Seen] | None = None

    @property
    def read(self) -> Seen | None:
        """notes.md's stat when the writer last read it into the index (None: not since the
        index opened)."""
        last = self._read
        return None if last is None else last[0]

    def look(self) -> Seen:
        """The stat now, taken by the writer before it reads notes.md."""
        return stat_of(self.path)

    def done(
        self,
        seen: Seen,
        ok: bool = True,
        renumbered: bool = False,
        reached: tuple[int, str, str | None] | None = None,
        again: bool = False,
    ) -> None:
        """The writer read notes.md as it was at seen (ok: and the index holds what it read;
        renumbered: read again from its start; reached: the offset the index holds notes.md
        to, the hash of the NOTES_WINDOW bytes before it and the digest of the whole blocks
        before it, when known; again: it failed for
        want of room, a failure the next recall tries again, so it is not counted as tried)."""
        if ok or not again:
            self.tried = seen
        if renumbered:  # before the read: a reader that sees this read sees the count too
            self.renumbered += 1
        if ok:
            offset, tail, prefix = reached if reached is not None else (None, None, None)
            self._read = (seen, offset, tail, prefix)

    def replaced(self) -> None:
        """notes.md was replaced whole (a restore) and read again from its start: a number
        shown before names nothing now."""
        self.renumbered += 1

    def clear(self) -> None:
        """The index file was opened anew: nothing of it has been read yet."""
        self._read = self.tried = None

    def changed(self) -> bool:
        """True when notes.md changed since the writer last read it (or tried to). False until
        it first did: the catch-up after a start reads notes.md first, and recall does not wait
        for that (it says how far the catch-up is)."""
        tried = self.tried
        return tried is not None and stat_of(self.path) != tried

    def print_numbers(self, numbers: Iterable[int], renumbered: int) -> None:
        """A search or stats printed these note numbers, read from the index (or notes.md) as
        it was at renumbered (taken before the read)."""
        for number in numbers:
            self.printed.pop(number, None)  # the newest last: the oldest go first past the cap
            self.printed[number] = renumbered
        while len(self.printed) > PRINTED_MOST:
            del self.printed[next(iter(self.printed))]

    def behind(self, number: int) -> bool:
        """True when note:number may name another note now than the one a search or stats
        printed under it: the index was never read since it opened, no search or stats printed
        it since memoryd started or since the index read notes.md again from its start, or
        notes.md changed since the last read that succeeded other than by growing past it."""
        last = self._read
        if last is None or self.printed.get(number) != self.renumbered:
            return True
        now = stat_of(self.path)
        return now != last[0] and not self._only_grew(last, now)

    def _only_grew(self, last: Read, now: Seen) -> bool:
        """True when notes.md at now is the file the index read, grown: the same file, as long
        as the offset the index reached or longer, the bytes before that offset as hashed."""
        seen, offset, tail, prefix = last
        if offset is None or tail is None or len(now) != 6 or len(seen) != 6:
            return False
        if now[:3] != seen[:3]:  # the mode, the device, the inode; the size: _same_bytes
            return False
        if self._grown == (last, now):
            return True
        if not self._same_bytes(now, offset, tail):
            return False
        # An index written before the digest was kept has none: the window alone, as then.
        if prefix is not None and not notesprefix.holds(self.path, prefix, offset):
            return False
        self._grown = (last, now)
        return True

    def _same_bytes(self, now: Seen, offset: int, tail: str) -> bool:
        """The hash of the NOTES_WINDOW bytes before offset is tail, read from the file now
        names (at most NOTES_WINDOW bytes)."""
        start = max(0, offset - NOTES_WINDOW)
        try:
            fd = open_file(self.path, os.O_RDONLY)
        except OSError:
            return False
        try:
            st = os.fstat(fd)  # open_file refused anything but a regular file
            if (st.st_dev, st.st_ino) != now[1:3] or st.st_size < offset:
                return False
            data = os.pread(fd, offset - start, start)
        except OSError:
            return False
        finally:
            os.close(fd)
        return len(data) == offset - start and hashlib.sha256(data).hexdigest() == tail
