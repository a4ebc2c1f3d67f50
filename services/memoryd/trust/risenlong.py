"""The sessions a line of labels.jsonl too long to be read as a label names, found as it passes.

A line longer than any label memoryd writes is passed over unread (boundedfile.Lines): read whole,
a gigabyte without a line end would take memoryd past its memory. Yet such a line may still be a
label (a hand edit gave a session's line a long field), and the label it records would be lost
where the index and the journal do not hold it: the session's log read again at a laxer label
after a rebuild. So its bytes are searched a piece at a time, as they pass, for each
"session": "ID" they hold (an id as memoryd takes one, proto.messages), and each session so named
is given the strictest label there is, as a class memoryd does not write is: fail closed.
"""

import json
import re

from memoryd.index.journallabels import Label
from proto.messages import is_session_id

STRICTEST: Label = ("secret", True)
BLANKS = 64  # blanks a hand edit may leave on each side of the colon, at most
VALUE = 768  # a session id's longest (128) with each character a \u escape, and then some
_NAMED = re.compile(
    rb'"session"[ \t]{0,%d}:[ \t]{0,%d}"((?:[^"\\]|\\.){1,%d})"' % (BLANKS, BLANKS, VALUE),
    re.DOTALL,
)
# The longest match: what is kept of one piece for the next, so a name cut between them is found.
_KEPT = len(b'"session"') + 2 * BLANKS + 1 + 2 + 2 * VALUE


class Named:
    """Given to Lines as passed: the sessions the lines it passed over name, in sessions."""

    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self.lines = 0  # how many lines were passed over
        self._line: int | None = None
        self._kept = b""

    def __call__(self, number: int, piece: bytes) -> None:
        if number != self._line:
            self._line, self._kept = number, b""
            self.lines += 1
        data = self._kept + piece
        for found in _NAMED.finditer(data):
            session = _session(found.group(1))
            if session is not None:
                self.sessions.add(session)
        self._kept = data[-_KEPT:]

    def said(self) -> str:
        """What the caller's line adds of them: which sessions, at which label."""
        if not self.sessions:
            return "it names no session"
        names = sorted(self.sessions)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5:,} more" if len(names) > 5 else "")
        return (
            f"the {'session' if len(names) == 1 else f'{len(names):,} sessions'} it names "
            f"({shown}) taken at the strictest label ({STRICTEST[0]}, untrusted)"
        )


def _session(raw: bytes) -> str | None:
    """The session id a JSON string's bytes hold (between its quotes), or None."""
    try:
        value = json.loads(b'"' + raw + b'"')
    except (ValueError, UnicodeError):
        return None
    return value if is_session_id(value) else None
