"""A session's label never gets laxer inside memoryd: what it recorded is a memory call's floor.

brokerd is the peer that tells memoryd a session's label, and the witness (witness.py) makes its
word stricter by the session's log. Both can lose the session: a brokerd restarted without its
ledger says "clean", and a log removed (or never written, a client without loopd) says nothing.
memoryd keeps two records of its own: memory/labels.jsonl (risen.py, what the witness and brokerd
reported each session rising to) and the journal's labels (index/journallabels.py, what each of
the session's memory calls was journalled with). The import path already calls a session's entry
untrusted by the journal (data/importclaim.py); the write path takes the same floor here, so the
two never disagree about one session.

So a memory call's label is the strictest of brokerd's word, the log's verdict and what memoryd
recorded (the class recorded as private is no floor: both records write a public session's rise
as private). brokerd's word stricter than labels.jsonl records is appended there (as the witness
does for the log), so it outlives brokerd's ledger and the index; brokerd's word laxer than
what memoryd recorded, with no log to explain it, is said in one log line naming the session,
once while memoryd runs (for the last MOST_SAID sessions said).

Cost: both records are cached per process and read only for what they gained (a stat of
labels.jsonl and of each journal month file a call); neither is read whole at a write. This runs
on the session's own reader thread (witness.ask), never on the event loop or the writer.
"""

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable

from memoryd.home import Home
from memoryd.index import journallabels
from memoryd.index.journallabels import CLEAN, Label, below, stricter
from memoryd.trust import risen
from proto.labels import CLASSES

log = logging.getLogger("memoryd.trust.witness")

# How many sessions' "laxer than recorded" lines are remembered, so that each is said once.
MOST_SAID = 10_000


def recorded(home: Home, session: str, reported: Iterable[Label]) -> Label | None:
    """Record brokerd's reports of session (the strictest of them, when stricter than a clean
    session's and than labels.jsonl holds), then the strictest label memoryd records for it,
    labels.jsonl's and the journal's; None when neither holds one above clean."""
    for label in reported:
        risen.rise(home, session, label)  # nothing written unless it is a rise
    kept, journalled = risen.label(home, session), journallabels.label(home, session)
    floor = journalled if kept is None else stricter(kept, journalled)
    if floor is None:
        return None
    # Both records write a class below private as private (what they record is a rise above
    # a clean session), so private there is no floor: a public session stays public.
    return (floor[0] if floor[0] != CLEAN[0] else CLASSES[0]), floor[1]


class Laxer:
    """Says, once a session, that brokerd reported it laxer than memoryd recorded it."""

    def __init__(self, most: int = MOST_SAID):
        self._most = most
        self._said: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def floor(self, session: str, reported: Label, witnessed: Label, floor: Label) -> Label:
        """witnessed (brokerd's word and the log's) made at least as strict as floor (what
        memoryd recorded); one line when floor made it stricter, the first time for session."""
        if not below(witnessed, floor):
            return witnessed
        with self._lock:
            first = session not in self._said
            self._said[session] = None
            self._said.move_to_end(session)
            while len(self._said) > self._most:
                self._said.popitem(last=False)
        if first:
            log.warning(
                "session %s: brokerd reports it %s, laxer than memoryd recorded it (%s in "
                "memory/labels.jsonl or the journal), and its log shows nothing stricter; its "
                "memory calls are taken at %s",
                session,
                _said(reported),
                _said(floor),
                _said(stricter(witnessed, floor)),
            )
        return stricter(witnessed, floor)


def _said(label: Label) -> str:
    return f"{label[0]}, {'untrusted' if label[1] else 'trusted'}"
