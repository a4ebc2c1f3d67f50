"""One MCP connection is one boxmaker session: its id, and its state as brokerd would keep it.

The id is mcp-<client name>-<start time>, so `bxctl memory log` shows which client wrote what. The
client names itself, so the name is cut down to the SessionId alphabet (a session id names a folder
in memoryd's and loopd's world) and to a length that leaves room for the prefix and the time.

The state starts from what the owner declared (--trust, --class) and only ever gets stricter, as
brokerd's ledger does: an answer labelled untrusted (a recall hit from a tainted session) makes the
rest of the connection untrusted, so a client declared trusted cannot launder what recall showed
it into memory.md. A new connection is a new session, but it starts from what the client's last
connections raised its state to (raised.py): the client's conversation, and the text in it,
outlives the connection.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from proto.labels import DataClass, Label, higher_class
from proto.messages import is_session_id

PREFIX = "mcp-"
UNNAMED = "client"
SESSION_MAX = 128
TIME_LENGTH = len("20261130T061316-482Z")  # start_time's
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]+")


def start_time(now: datetime) -> str:
    """20261130T061316-482Z: UTC, to the millisecond, in the SessionId alphabet."""
    now = now.astimezone(UTC)
    return now.strftime("%Y%m%dT%H%M%S") + f"-{now.microsecond // 1000:03d}Z"


def client_part(name: object, room: int) -> str:
    """The client's name in the SessionId alphabet: runs of anything else become one '-'."""
    text = name if isinstance(name, str) else ""
    text = _NOT_ALLOWED.sub("-", text).strip("-_")[:room].strip("-_")
    return text or UNNAMED


def client_key(client_name: object) -> str:
    """The client's part of its session ids: the name its kept state is filed under."""
    return client_part(client_name, SESSION_MAX - len(PREFIX) - 1 - TIME_LENGTH)


def session_id(client_name: object, started: datetime) -> str:
    when = start_time(started)
    room = SESSION_MAX - len(PREFIX) - 1 - len(when)
    session = f"{PREFIX}{client_part(client_name, room)}-{when}"
    if not is_session_id(session):  # cannot happen with the parts above; refuse rather than send
        raise ValueError(f"built an invalid session id {session!r}")
    return session


@dataclass
class SessionState:
    """The class and untrusted flag memory_call carries; only ever raised."""

    klass: DataClass
    untrusted: bool

    def raise_to(self, label: Label) -> None:
        self.klass = higher_class(self.klass, label.klass)
        self.untrusted = self.untrusted or label.untrusted

    def label(self) -> Label:
        return Label(klass=self.klass, untrusted=self.untrusted)
