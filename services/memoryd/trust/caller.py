"""Who made a memory call: one frozen value carried from the validated message to the journal.

brokerd's memory_call names the session, the call and the session's label (taint class and the
untrusted flag); proto.messages has validated all four by the time service.py sees them, so
Caller.of takes them as they are. A caller built from loose values (a test, a tool driving the
store directly) goes through Caller.checked, which refuses what spec 5 would not send. The
witness (witness.py) can only make a caller stricter (Caller.stricter). The owner's edits have a
caller too: session "owner" (promote, edit, a hand edit) or None (undo), no call id, no taint.

"owner" is a valid session id (proto's pattern takes it, and session log folders are named by that
pattern), but no session may write memory under it: `bxctl memory log` and `show` print only the
session's name, so a session's write journalled as session "owner" would read, word for word, as
the owner's own edit. Caller.of and Caller.checked refuse it (OwnersName), before the witness or
the writer is asked; the session's recalls and its log, which the journal never lists, are served
and indexed as any session's.
"""

from dataclasses import dataclass, replace

from memoryd.errors import MalformedCall
from proto.labels import is_class
from proto.messages import MemoryCall, is_session_id

OWNER_SESSION = "owner"
"""The session name the owner's own edits are journalled under, which no session may write as."""

OWNERS_NAME = (
    'refused: a session named "owner" may not write memory: "owner" is the name the owner\'s own'
    " edits are journalled under (start the session under another id)"
)


class OwnersName(MalformedCall):
    """A memory write from a session whose id is the name the owner's edits are journalled under;
    nothing is written."""

    def __init__(self) -> None:
        super().__init__(OWNERS_NAME)


@dataclass(frozen=True)
class Caller:
    session: str | None
    call_id: str | None
    taint: str | None
    untrusted: bool = False

    @classmethod
    def of(cls, message: MemoryCall) -> "Caller":
        """The caller of a memory_call message (already validated by proto.messages)."""
        request = message.request
        if request.session == OWNER_SESSION:
            raise OwnersName
        return cls(request.session, request.call_id, message.taint, message.untrusted)

    @classmethod
    def checked(
        cls, session: object, call_id: object, taint: object, untrusted: object
    ) -> "Caller":
        """A session's caller from loose values; MalformedCall naming the first wrong one."""
        if not is_session_id(session):
            raise MalformedCall("refused: malformed call: the session id is not valid")
        if session == OWNER_SESSION:
            raise OwnersName
        if not isinstance(call_id, str) or not 1 <= len(call_id) <= 200:
            raise MalformedCall("refused: malformed call: the call id must be 1 to 200 characters")
        if not is_class(taint):
            raise MalformedCall("refused: malformed call: taint must be public, private or secret")
        if not isinstance(untrusted, bool):
            raise MalformedCall("refused: malformed call: untrusted must be true or false")
        return cls(session, call_id, taint, untrusted)

    def stricter(self, taint: str, untrusted: bool) -> "Caller":
        """This caller with the label a witness found (never less strict: witness.py)."""
        return replace(self, taint=taint, untrusted=untrusted)

    def head(self) -> dict:
        """The journal line's first fields, as memoryd has always written them."""
        return {
            "session": self.session,
            "call": self.call_id,
            "taint": self.taint,
            "untrusted": self.untrusted,
        }


OWNER = Caller(OWNER_SESSION, None, None, False)
"""The owner's own edits (promote, edit): the journal names the session "owner"."""
UNDO = Caller(None, None, None, False)
"""bxctl memory undo: the journal line has session null."""
