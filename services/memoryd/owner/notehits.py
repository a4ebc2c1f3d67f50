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

import re
from array import array
from collections.abc import Iterable

from memoryd.journal import forgottenmarker
from memoryd.journal.recallline import note_digest
from memoryd.memory.notes import NoteEntry
from proto.plural import counted

# A note hit as read from a line: kind, session, number, digest (None on a line written before
# hits kept one).
HitKey = tuple[str, str, int, str | None]
_DIGEST = re.compile(r"[0-9a-f]{16}")  # as note_digest gives it


class NoteIds:
    """The notes of notes.md as stats read it, to tell which one a hit names: of each note only
    its number, kind and session (an index into the pairs seen) and digest (8 bytes), and whether
    it is a forget's marker, so that stats holds a few bytes a note, never their texts (notes.md
    has no limit: it is read a note at a time). The notes may be given one at a time. Which note
    has a digest is worked out only for a hit its number does not find (notes.md edited by hand
    since)."""

    def __init__(self, all_notes: Iterable[NoteEntry]) -> None:
        self._pairs: dict[tuple[str, str], int] = {}
        self._heads = array("L")  # per note, its (kind, session) as an index into _pairs
        self._digests = bytearray()  # per note, 8 bytes
        self._markers = bytearray()  # per note, 1 when its text is a forget's marker
        self._numbers = array("q")  # per note, its number
        self._where: dict[int, int] | None = None  # number to note, once they do not run on
        self._pair_list: list[tuple[str, str]] = []
        self._by_digest: dict[bytes, int] | None = None
        for note in all_notes:
            self.add(note)

    def add(self, note: NoteEntry) -> None:
        at = len(self._numbers)
        if self._where is None and at and note.number != self._numbers[0] + at:
            self._where = {n: i for i, n in enumerate(self._numbers)}
        if self._where is not None:
            self._where[note.number] = at  # the last of a number, as a dict of them would hold
        self._numbers.append(note.number)
        pair = (note.kind, note.session)
        if (head := self._pairs.get(pair)) is None:
            head = self._pairs[pair] = len(self._pair_list)
            self._pair_list.append(pair)
        self._heads.append(head)
        text = note.text.encode("utf-8", "replace")
        self._digests += bytes.fromhex(note_digest(note.kind, note.time, note.session, text))
        self._markers.append(forgottenmarker.is_marker(note.text))

    def _at(self, number: int) -> int | None:
        if self._where is not None:
            return self._where.get(number)
        if not self._numbers or not 0 <= number - self._numbers[0] < len(self._numbers):
            return None
        return number - self._numbers[0]

    def _digest(self, at: int) -> bytes:
        return bytes(self._digests[8 * at : 8 * at + 8])

    def number_of(self, key: HitKey) -> int | None:
        """The number now of the note the hit named, or None when that can no longer be told."""
        kind, session, number, digest = key
        at = self._at(number)
        same_header = at is not None and self._pair_list[self._heads[at]] == (kind, session)
        if digest is None:
            return number if same_header else None
        wanted = _digest_bytes(digest)
        if at is not None and self._digest(at) == wanted:
            return number
        if at is not None and same_header and self._markers[at]:
            return number  # forgotten since: the digest was of the text the marker replaced
        if wanted is None:
            return None
        if self._by_digest is None:
            self._by_digest = {}
            for each, now in enumerate(self._numbers):
                held = self._digest(each)
                self._by_digest[held] = -1 if held in self._by_digest else now
        found = self._by_digest.get(wanted, -1)
        return found if found != -1 else None


def _digest_bytes(digest: str) -> bytes | None:
    """A hit's digest as the 8 bytes NoteIds keeps; None when it is no digest a note has."""
    return bytes.fromhex(digest) if _DIGEST.fullmatch(digest) else None


def unattributed_said(hits: int) -> str:
    """The line stats' answer gives the note hits it counted for no note."""
    return (
        f"recall log: {counted(hits, 'note hit')} not counted: notes.md no longer holds the note"
        " as the recall found it (edited by hand since)"
    )
