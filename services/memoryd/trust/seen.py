"""How far the witness read each session's log, kept for the sessions called last (witness.py).

The witness keeps, for a session, where it read the session's log to (device, inode, offset and
the bytes before it) and the label in force there (Seen), so that a call reads only what the log
gained. Kept for every session that ever called, that grew without end: about half a KiB a
session, and a brokerd peer can name a new session with each call. So at most MOST_SEEN are kept,
the least recently called dropped first, never one that is being read.

What a drop must not lose is the label. The witness promises that a session's label never gets
less strict while memoryd runs: a log deleted, replaced or shrunk after the fact changes nothing,
and a log found unusable keeps its session untrusted for good. Where the log was read to is only
a saving: a session whose entry was dropped has its log read whole at its next call, as after a
start, and its label can only grow from there. So a dropped session whose label is stricter than
a new one's (public, trusted) leaves that label behind (its id and a small number, about 150
bytes), and its entry, made again, starts from it. A session whose log showed nothing, a made-up
id among them, leaves nothing: read again, its log says all it can say.
"""

import contextlib
import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from proto.labels import CLASS_RANK, CLASSES

# How many sessions' read state is kept (about half a KiB each).
MOST_SEEN = 256


@dataclass
class Seen:
    """How far one session's log was read and the label in force at that point; lock: held
    while the log is read."""

    device: int = -1
    inode: int = -1
    offset: int = 0
    tail: bytes = b""
    klass: str = "public"
    untrusted: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # How many judges hold it now (under the store's lock): one held is never dropped.
    users: int = field(default=0, repr=False, compare=False)


def _code(seen: Seen) -> int:
    """The label as a small number: 0 for a new session's (public, trusted)."""
    return 2 * CLASS_RANK[seen.klass] + int(seen.untrusted)


class SeenStore:
    """The Seen of the MOST_SEEN sessions called last, and the labels the others left."""

    def __init__(self, most: int = MOST_SEEN):
        self.most = most
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, Seen] = OrderedDict()
        self._labels: dict[str, int] = {}

    @contextlib.contextmanager
    def held(self, session: str) -> Iterator[Seen]:
        """The session's Seen (made again from the label it left, if it was dropped), not
        dropped while held."""
        with self._lock:
            seen = self._seen.get(session)
            if seen is None:
                seen = self._seen[session] = self._made(session)
            else:
                self._seen.move_to_end(session)
            seen.users += 1
        try:
            yield seen
        finally:
            with self._lock:
                seen.users -= 1
                self._drop_beyond_most()

    def __contains__(self, session: str) -> bool:
        with self._lock:
            return session in self._seen

    def sizes(self) -> tuple[int, int]:
        """How many sessions' Seen is kept, and how many dropped sessions left a label."""
        with self._lock:
            return len(self._seen), len(self._labels)

    def _made(self, session: str) -> Seen:
        code = self._labels.pop(session, 0)
        return Seen(klass=CLASSES[code // 2], untrusted=bool(code % 2))

    def _drop_beyond_most(self) -> None:
        excess = len(self._seen) - self.most
        if excess <= 0:
            return
        # Least recently called first; one being read stays (the store may exceed most for as
        # long as more than most sessions are read at once).
        idle = (session for session, seen in self._seen.items() if seen.users == 0)
        dropped = list(itertools.islice(idle, excess))
        for session in dropped:
            seen = self._seen.pop(session)
            code = _code(seen)
            if code:
                self._labels[session] = code
