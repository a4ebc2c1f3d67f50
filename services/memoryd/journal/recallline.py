"""The recall log's line model: one line of recalls/YYYY-MM.jsonl (spec 5).

recall/logfile.py writes the log (RecallLog; recall/recaller.py makes each line, log_line);
owner/stats.py reads it to count hits, and the recall modes add the mode that answered. The model
sits apart from recall/ so that those readers need not import the search (which imports the
modes). Dumped compact, time first, in field
order: owner/stats.py reads the lines memoryd wrote by their bytes.
"""

import json

from pydantic import BaseModel, ConfigDict


class RecallHit(BaseModel):
    """A hit as the recall log keeps it (Hit.source)."""

    model_config = ConfigDict(extra="allow", strict=True)
    kind: str
    session: str
    record: int
    tag: str


class RecallLine(BaseModel):
    """One line of recalls/YYYY-MM.jsonl, fields in the order memoryd writes them; a line holds
    only the fields its writer set ("by": "owner" on the owner's searches, "partial": true when
    the index was catching up, "mode" when a recall mode other than spec answered)."""

    model_config = ConfigDict(extra="allow", strict=True)
    time: str
    session: str
    query: str
    k: int
    hits: list[RecallHit] = []
    by: str | None = None
    partial: bool | None = None
    mode: str | None = None

    def dump_line(self) -> str:
        """The line as written: compact JSON (owner/stats.py reads it by its bytes)."""
        entry = self.model_dump(mode="json", exclude_unset=True)
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
