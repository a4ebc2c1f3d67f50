"""The catch-up of notes.md after memoryd's own writes: run after their answer, not before.

A memory call or an owner's write is answered once it is applied and journalled. The index's
catch-up of notes.md that follows it is a writer job of its own, queued at the write's priority as
the write ends (before its answer goes out), so it runs before any job that comes after the
answer: a recall or search still finds the note (its own look at notes.md then finds the index
caught up). Run inside the write, it would hold the answer for as long as it takes: notes.md
changed outside memoryd since the index read it (an owner's fix of a typo) is read again from its
start, seconds for a notes.md of years. brokerd stops waiting at its own limit and tells the model
the write failed, and the write stood. That job is itself one part of the reading
(index/notesparts.py); a part that leaves some hands the rest to the background catch-up
(catchup.py), so no write waits for more than one part.

The index tells memoryd's own change of notes.md from anyone else's by the stat notes.md had just
before the write (own_from: a notes.md the index read, changed since only by memoryd, is read on
from where the index stopped). Deferred, more writes may run before the catch-up does, so what is
kept is a chain: the stat before the first write not yet caught up, and the stat after the last.
A write that begins from another stat than the last one left (the owner saved notes.md in
between), or a notes.md changed since the last write ended, breaks the chain: the catch-up then
takes every change as another's (own_from None) and reads notes.md again from its start, as a
change by hand must be read, unless notes.md only grew (the chain dies with memoryd, so a restart
after a kill between a write and its catch-up finds the same: index/notesparts.py reads on from
the index's offset). Everything here runs on the writer thread, one job at a time.
"""

from memoryd.index.index import Index

Chain = tuple[str | None, str | None]  # notes.md's stat before the first write, after the last


class OwnNotes:
    """memoryd's own changes of notes.md that the index has not caught up with yet."""

    def __init__(self, index: Index):
        self.index = index
        self._chain: Chain | None = None

    def wrote(self, before: str | None) -> None:
        """A write that began when notes.md's stat was before (Index.notes_file) has ended."""
        after = self.index.notes_file()
        if self._chain is None:
            self._chain = (before, after)
            return
        first, last = self._chain
        self._chain = (first if before is not None and before == last else None, after)

    def own_from(self, before: str | None = None) -> str | None:
        """For a catch-up of notes.md now: the stat from which every change of notes.md up to now
        is memoryd's own (None: not known, so any change is taken as another's). before: the stat
        the write this catch-up follows at once began from (None: it follows none). The writes
        kept are caught up by it, and forgotten."""
        chain, self._chain = self._chain, None
        if chain is None:
            return before
        first, last = chain
        if before is not None:  # a write since the last one kept: it must begin where that ended
            return first if before == last else None
        return first if self.index.notes_file() == last else None
