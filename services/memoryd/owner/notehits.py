"""Which note of notes.md as it is now a hit of the recall log names, for stats' hit counts.

A note hit keeps the note's number in notes.md at the recall; the owner may edit notes.md by
hand, and memoryd then reads it again from its start and numbers its notes anew, so the number
alone may name another note by the time stats reads the line: a note recalled three times would
be listed as never recalled, and its hits given to the note that took its number. So a hit
keeps its note's digest too (journal/recallline.note_digest: the header's kind, time and session
and the text's first bytes), and is counted for the note that has it: the one at its number when
that one has it (two notes alike in all of that are told apart by it), else the one note that
has it; a hit whose note no note has now (removed or rewritten by hand), or that two notes away
from its number share, is counted for none and said. A forgotten note (its text the forget
marker, its header kept) keeps the hits on its number while its kind and session are theirs.

A line written before hits kept a digest names its note by kind, session and number only: it
is counted for the note at its number when that note has its kind and session, else for none.
"""

from collections import defaultdict

from memoryd.journal import forgotten
from memoryd.journal.recallline import note_digest
from memoryd.memory.notes import NoteEntry
from proto.plural import counted

# A note hit as read from a line: kind, session, number, digest (None on a line written before
# hits kept one).
HitKey = tuple[str, str, int, str | None]


class NoteIds:
    """The notes of notes.md as stats read it, to tell which one a hit names. The digests are
    worked out only for the notes a hit's number does not find at once (notes.md edited by
    hand since), so a stats of a file never edited costs no hashing of its notes."""

    def __init__(self, all_notes: list[NoteEntry]) -> None:
        self._at = {note.number: note for note in all_notes}
        self._notes = all_notes
        self._digests: dict[int, str] = {}
        self._by_digest: dict[str, list[int]] | None = None

    def _digest(self, note: NoteEntry) -> str:
        if (known := self._digests.get(note.number)) is None:
            text = note.text.encode("utf-8", "replace")
            known = self._digests[note.number] = note_digest(
                note.kind, note.time, note.session, text
            )
        return known

    def number_of(self, key: HitKey) -> int | None:
        """The number now of the note the hit named, or None when that can no longer be told."""
        kind, session, number, digest = key
        note = self._at.get(number)
        same_header = note is not None and (note.kind, note.session) == (kind, session)
        if digest is None:
            return number if same_header else None
        if note is not None and self._digest(note) == digest:
            return number
        if note is not None and same_header and forgotten.is_marker(note.text):
            return number  # forgotten since: the digest was of the text the marker replaced
        if self._by_digest is None:
            self._by_digest = defaultdict(list)
            for each in self._notes:
                self._by_digest[self._digest(each)].append(each.number)
        found = self._by_digest.get(digest, [])
        return found[0] if len(found) == 1 else None


def unattributed_said(hits: int) -> str:
    """The line stats' answer gives the note hits it counted for no note."""
    return (
        f"recall log: {counted(hits, 'note hit')} not counted: notes.md no longer holds the note"
        " as the recall found it (edited by hand since)"
    )
