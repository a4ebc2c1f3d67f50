"""The recall log's line model: one line of recalls/YYYY-MM.jsonl (spec 5).

recall/logfile.py writes the log (RecallLog; recall/recaller.py makes each line, log_line);
owner/stats.py reads it to count hits, and the recall modes add the mode that answered. The model
sits apart from recall/ so that those readers need not import the search (which imports the
modes). Dumped compact, time first, in field
order: owner/stats.py reads the lines memoryd wrote by their bytes.
"""

import hashlib
import json

from pydantic import BaseModel, ConfigDict

# The bytes of a note's text its digest takes: no more than the least [index] max_record_bytes
# keeps of a text (1,024 bytes, less a character cut in two), so a note indexed cut has the
# digest of the note in notes.md.
NOTE_TEXT_BYTES = 1_000


def note_digest(kind: str, time: str, session: str, text: bytes) -> str:
    """What a note hit's line keeps to tell its note by: its number is that of notes.md at the
    recall, and a hand edit of notes.md renumbers the notes after the edit. The header's kind,
    time and session and the text's first NOTE_TEXT_BYTES bytes, hashed (short: it names one
    note of a file, never proves one)."""
    h = hashlib.sha256()
    h.update(f"{kind}\n{time}\n{session}\n".encode())
    h.update(text[:NOTE_TEXT_BYTES])
    return h.hexdigest()[:16]


class RecallHit(BaseModel):
    """A hit as the recall log keeps it; a note's hit also its digest ("note", after the tag, so
    that a reader of the lines before it, which counts by kind, session and record, reads it
    alike)."""

    model_config = ConfigDict(extra="allow", strict=True)
    kind: str
    session: str
    record: int
    tag: str
    note: str | None = None


class RecallLine(BaseModel):
    """One line of recalls/YYYY-MM.jsonl, fields in the order memoryd writes them; a line holds
    only the fields its writer set ("by": "owner" on the owner's searches, "partial": true when
    the index was catching up, "mode" when a recall mode other than spec answered; "mode":
    "spec" with "building", the configured mode, when the spec's search answered while that
    mode's tables were built)."""

    model_config = ConfigDict(extra="allow", strict=True)
    time: str
    session: str
    query: str
    k: int
    hits: list[RecallHit] = []
    by: str | None = None
    partial: bool | None = None
    mode: str | None = None
    building: str | None = None

    def dump_line(self) -> str:
        """The line as written: compact JSON (owner/stats.py reads it by its bytes)."""
        entry = self.model_dump(mode="json", exclude_unset=True)
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
