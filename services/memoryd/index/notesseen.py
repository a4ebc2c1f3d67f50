"""What notes.md was when the index last read it: its stat (device, inode, size, times).

The owner may edit notes.md by hand, and the index reads it only when asked to. A recall compares
notes.md's stat with the one taken when the writer last read it (one stat, nothing more when
nothing changed) and, when they differ, has the writer catch the index up first (service.py), so
that recall and search answer from notes.md as it is. Forget compares it with the stat of the last
read that succeeded: a note number given while the index was behind notes.md may name another
note than the one search showed, and forget refuses it (data/targets.py). So it does once the index
has read notes.md again from its start (renumbered: a hand edit before the end moves the numbers
after it) since the owner's last search printed note numbers (shown): a recall in between catches
the index up, and the number search printed would then name the note that moved into its place.

The stat is taken before the read, so a change made while the writer reads is seen at the next
look. An edit in place that keeps the size, the inode and the times to the nanosecond is not seen
here; the hash of notes.md's tail (indexer.py) still catches it at the next write.
"""

import os
from pathlib import Path

Seen = tuple[object, ...]


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
        # notes.md's stat when the writer last read it into the index and committed (None: not
        # since the index opened), and when it last tried to, whether or not that succeeded.
        self.read: Seen | None = None
        self.tried: Seen | None = None
        # How many times the index read notes.md again from its start, and that count when the
        # owner's last search (owner/search.py) printed note numbers.
        self.renumbered = 0
        self.shown = 0

    def look(self) -> Seen:
        """The stat now, taken by the writer before it reads notes.md."""
        return stat_of(self.path)

    def done(self, seen: Seen, ok: bool = True, renumbered: bool = False) -> None:
        """The writer read notes.md as it was at seen (ok: and the index holds what it read;
        renumbered: read again from its start)."""
        self.tried = seen
        if ok:
            self.read = seen
        if renumbered:
            self.renumbered += 1

    def clear(self) -> None:
        """The index file was opened anew: nothing of it has been read yet."""
        self.read = self.tried = None

    def changed(self) -> bool:
        """True when notes.md changed since the writer last read it (or tried to). False until
        it first did: the catch-up after a start reads notes.md first, and recall does not wait
        for that (it says how far the catch-up is)."""
        tried = self.tried
        return tried is not None and stat_of(self.path) != tried

    def behind(self) -> bool:
        """True when a note number the owner was shown may name another note now: the index was
        never read since it opened, notes.md changed since the last read that succeeded, or the
        index read it again from its start since the owner's last search."""
        read = self.read
        return read is None or self.renumbered != self.shown or stat_of(self.path) != read
