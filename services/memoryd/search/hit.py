"""One recall hit: where it is from, its class and taint, its snippet, and its rendered line.

Its own module so that the recall modes (modes/context.py, modes/hybrid.py) can build hits without
importing recall.py, which runs them.
"""

from dataclasses import dataclass

_SAID = {
    "user": "the owner said",
    "assistant": "the assistant said",
    "call": "the assistant called",
}


@dataclass(frozen=True)
class Hit:
    kind: str  # session, noted, moved or dropped
    session: str
    record: int
    time: str
    role: str | None  # user, assistant, call; memory.md or user.md for moved and dropped
    klass: str
    untrusted: bool
    snippet: str

    @property
    def tag(self) -> str:
        if self.kind == "moved":
            return "identity"
        if self.kind == "dropped":
            return "memory"
        return "memory-tainted" if self.untrusted else "memory"

    def header(self, position: int) -> str:
        """The hit's line: [n] tag · where it is from · class."""
        when = f"{self.time[:10]} {self.time[11:16]} UTC"
        if self.kind in ("moved", "dropped"):
            origin = f"{self.kind} {self.time[:10]} from {self.role}"
        elif self.kind == "noted":
            origin = f"note, {when}, session {self.session}"
        else:
            origin = f"session {self.session}, {when}, {_SAID.get(self.role or '', 'said')}"
        return f"[{position}] {self.tag} · {origin} · {self.klass}"

    def source(self) -> dict[str, str | int]:
        """What the recall log keeps of the hit."""
        return {"kind": self.kind, "session": self.session, "record": self.record, "tag": self.tag}
