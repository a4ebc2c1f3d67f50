"""sessions/ listed again after a catch-up that began without being able to list it.

sessions/ is loopd's; memoryd only reads it to index. At a start it may be there and not be a
folder memoryd can list: its mode or its owner after a copy, a restore by hand or a chown of the
home, a file or a FIFO in its place, a link to a disk not mounted. memoryd serves all the same,
the index keeping what it holds of those sessions (said once in a WARNING,
newindex.listed_sessions), and the start's catch-up (catchup.py) reads notes.md alone. Without a
listing later, the logs that grew while memoryd was down would wait for their session's next turn
or a restart. So sessions/ is listed again RETRY_FIRST seconds later, the wait doubling up to
RETRY_MOST as the catch-up's retries do, and at once when a turn ends or a write is made, until
it lists; its logs then go to the catch-up as at a start (those the index read to their end as
they are now are counted at once, index/unchanged.py), recall saying how far it is, and memoryd's
look for removed sessions drops those gone meanwhile (removedlook.py). Kept apart from catchup.py,
which catches up what a listing found. Set off by a timer (ticker.py).
"""

import contextlib
import logging

from memoryd.index import unchanged
from memoryd.ticker import Ticker
from proto.plural import counted

log = logging.getLogger("memoryd")


class ListAgain(Ticker):
    """Whether sessions/ is still to be listed, and when it is tried next (on memoryd's loop)."""

    def __init__(self, catching, first: float, most: float):
        super().__init__(catching.service)
        self.catching = catching  # catchup.CatchUp: given what the listing finds (more)
        self.first, self.most = first, most
        self.waiting = False  # sessions/ could not be listed, and has not been since
        self._delay = first

    def start(self) -> None:
        """The catch-up's listing found no folder it could list: try again later."""
        self._bind()
        self.waiting, self._delay = True, self.first
        self._due_in(self._delay)

    def wake(self) -> None:
        """A turn ended or a write was made (the owner may have mended sessions/): try now.
        memoryd stops: the timer ends."""
        if self.waiting:
            self._due_in(0)

    def _armed(self) -> bool:
        return self.waiting and super()._armed()

    def _job(self):
        return self._list()  # a tick while one runs waits for it: it sets the next try

    async def _list(self) -> None:
        service, index = self.service, self.service.index
        sessions = None
        # A restore to finish, or the readers stopped as memoryd stops: tried again later.
        with contextlib.suppress(Exception):
            sessions = await service._read(index.listed)
        if sessions is None:  # still so (said once when it began): tried again later
            self._delay = min(2 * self._delay, self.most)
            self._due_in(self._delay)
            return
        self.waiting = False
        done: set[str] = set()
        with contextlib.suppress(Exception):  # then the writer looks at every log
            done = await service._read(unchanged.unchanged, index, sessions)
        todo = [session for session in sessions if session not in done]
        log.info(
            "%s can be listed again: %s, %s to catch up",
            index.home.sessions,
            counted(len(sessions), "session log"),
            counted(len(todo), "log") if todo else "none",
        )
        self.catching.more(todo)
