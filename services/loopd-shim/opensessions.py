"""How many sessions are open at once, and the refusal of a start past loopd.toml's cap.

Every start writes a session folder (its baseline: 3 to 11 KB, as full as memory is) and keeps it
for good, so a peer on the control socket that starts sessions in a loop would fill the disk. A
session is open from its start until it has had no message for [sessions] idle_minutes; then it has
ended and no longer counts (a message to it later opens it again, never refused: its folder is
already there). A start while [sessions] max_open are open is refused before anything is asked or
written.

The count lives in loopd-shim's memory only: a restart ends every session, and the table never
holds more than max_open sessions plus those spoken to within the idle window.
"""

import logging
import time
from collections.abc import Callable

from loopd_shim.errors import TooManySessions
from proto.plural import counted

log = logging.getLogger("loopd_shim.opensessions")

MAX_OPEN = 64
IDLE_MINUTES = 60.0
# A refusal is logged once in this many seconds at most: a peer asking in a loop is one line.
LOG_INTERVAL = 10.0


class OpenSessions:
    """The sessions used within the idle window, each with when it was last used."""

    def __init__(
        self,
        max_open: int = MAX_OPEN,
        idle_minutes: float = IDLE_MINUTES,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.max_open = max_open
        self.idle_seconds = idle_minutes * 60
        self._clock = clock
        self._used: dict[str, float] = {}  # in the order last used, oldest first
        self._logged = -LOG_INTERVAL

    def _drop_ended(self) -> None:
        ended = self._clock() - self.idle_seconds
        for session, used in list(self._used.items()):
            if used > ended:
                break  # the rest were used later still
            del self._used[session]

    def open_count(self) -> int:
        self._drop_ended()
        return len(self._used)

    def reserve(self, session: str) -> bool:
        """Count session as open before its start is carried out; TooManySessions, one line, at
        the cap. Taken at once (no await), so that starts arriving together cannot all pass.
        Whether it was newly counted: only then may a start that fails release it."""
        count = self.open_count()
        if session in self._used:
            return False  # open already: its start is refused as a session that exists
        if count >= self.max_open:
            now = self._clock()
            if now - self._logged >= LOG_INTERVAL:
                shown = counted(len(self._used), "session")
                log.warning("session start refused: %s open, [sessions] max_open", shown)
                self._logged = now
            raise TooManySessions(self.refusal())
        self.used(session)
        return True

    def release(self, session: str) -> None:
        """A start that did not happen: its session is not counted."""
        self._used.pop(session, None)

    def used(self, session: str) -> None:
        """A message to session: it is open (again) from now."""
        self._used.pop(session, None)
        self._used[session] = self._clock()

    def refusal(self) -> str:
        minutes = self.idle_seconds / 60
        return (
            f"loopd-shim has {counted(len(self._used), 'session')} open, loopd.toml's [sessions] "
            "max_open; "
            "no session was started: a session ends once it has had no message for "
            f"{minutes:g} minutes ([sessions] idle_minutes), so wait for one to end, or raise "
            "max_open and restart loopd-shim (scripts/stack restart loopd-shim), which ends "
            "them all"
        )
