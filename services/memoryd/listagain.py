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
which catches up what a listing found. A timer, not a task that sleeps, as removedlook's: nothing
is left pending when memoryd's loop ends.
"""

import asyncio
import contextlib
import logging

from memoryd.index import unchanged
from proto.plural import counted

log = logging.getLogger("memoryd")


class ListAgain:
    """Whether sessions/ is still to be listed, and when it is tried next (on memoryd's loop)."""

    def __init__(self, catching, first: float, most: float):
        self.catching = catching  # catchup.CatchUp: given what the listing finds (more)
        self.service = catching.service
        self.first, self.most = first, most
        self.waiting = False  # sessions/ could not be listed, and has not been since
        self.task: asyncio.Task | None = None  # the listing in flight, if any
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._delay = first

    def start(self) -> None:
        """The catch-up's listing found no folder it could list: try again later."""
        self._loop = asyncio.get_running_loop()
        self.waiting, self._delay = True, self.first
        self._due_in(self._delay)

    def wake(self) -> None:
        """A turn ended or a write was made (the owner may have mended sessions/): try now.
        memoryd stops: the timer ends."""
        if self.waiting:
            self._due_in(0)

    def _due_in(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        if self.service.stopping.is_set() or self._loop is None or not self.waiting:
            return
        self._timer = self._loop.call_later(seconds, self._due)

    def _due(self) -> None:
        self._timer = None
        if self.service.stopping.is_set() or self._loop is None:
            return
        if self.task is not None and not self.task.done():
            return  # the listing in flight sets the next try
        self.task = self._loop.create_task(self._list())

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
