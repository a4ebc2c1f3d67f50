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

Where the log was read to is worth keeping too, when it is cheap: a session open for days has a
log of hundreds of megabytes, and an owner whose scripts run a thousand short sessions a day
would otherwise have it read whole again every MOST_SEEN of them. So a dropped session leaves its
Point (device, inode, offset and the digest of the bytes before it, under 300 bytes) among the
MOST_POINTS dropped last, and its entry, made again, reads on from there when the log is still the
same file. The points are written at a clean stop and taken up at the next start (seenfile.py).
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
# How many dropped sessions' points are kept (under 300 bytes each).
MOST_POINTS = 4_096


@dataclass
class Seen:
    """How far one session's log was read and the label in force at that point; lock: held
    while the log is read."""

    device: int = -1
    inode: int = -1
    offset: int = 0
    tail: bytes = b""  # the sha256 of the bytes just before offset
    klass: str = "public"
    untrusted: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # How many judges hold it now (under the store's lock): one held is never dropped.
    users: int = field(default=0, repr=False, compare=False)


@dataclass(frozen=True)
class Point:
    """Where a session's log was read to, and the label in force there."""

    device: int
    inode: int
    offset: int
    tail: bytes
    klass: str
    untrusted: bool


def _code(seen: Seen | Point) -> int:
    """The label as a small number: 0 for a new session's (public, trusted)."""
    return 2 * CLASS_RANK[seen.klass] + int(seen.untrusted)


class SeenStore:
    """The Seen of the MOST_SEEN sessions called last, and the labels the others left."""

    def __init__(self, most: int = MOST_SEEN):
        self.most = most
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, Seen] = OrderedDict()
        self._labels: dict[str, int] = {}
        self._points: OrderedDict[str, Point] = OrderedDict()

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

    def points(self) -> list[tuple[str, Point]]:
        """Every session's point worth keeping, the least recently called first."""
        with self._lock:
            kept = list(self._points.items())
            kept += [(s, _point(seen)) for s, seen in self._seen.items() if seen.offset > 0]
        return kept

    def take(self, points: dict[str, Point]) -> None:
        """Points kept by an earlier memoryd (seenfile.py), for sessions not called yet."""
        with self._lock:
            for session, point in points.items():
                if session not in self._seen:
                    self._points[session] = point
                    self._points.move_to_end(session)
            while len(self._points) > MOST_POINTS:
                self._points.popitem(last=False)

    def _made(self, session: str) -> Seen:
        code = self._labels.pop(session, 0)
        point = self._points.pop(session, None)
        if point is None:
            return Seen(klass=CLASSES[code // 2], untrusted=bool(code % 2))
        # The stricter of the label left and the point's, each part on its own.
        rank = max(code // 2, CLASS_RANK[point.klass])
        return Seen(
            device=point.device,
            inode=point.inode,
            offset=point.offset,
            tail=point.tail,
            klass=CLASSES[rank],
            untrusted=bool(code % 2) or point.untrusted,
        )

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
            if seen.offset > 0:
                self._points[session] = _point(seen)
                if len(self._points) > MOST_POINTS:
                    self._points.popitem(last=False)


def _point(seen: Seen) -> Point:
    return Point(seen.device, seen.inode, seen.offset, seen.tail, seen.klass, seen.untrusted)
