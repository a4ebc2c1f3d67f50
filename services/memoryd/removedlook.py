"""The look, while memoryd runs, for sessions the owner removed from sessions/.

The index drops a removed session's rows at the catch-up after a start and when session_updated
names it (index/gone.py); a finished conversation the owner removes while memoryd runs sends no
session_updated again, so without this look recall would serve it until memoryd restarts, for
weeks. Every LOOK_SECONDS, once the start's catch-up is done, a reader finds the sessions the index
holds whose log is gone (gone.looked: a row and a stat per session held, no listing of sessions/
and no writer job while none is), and the writer drops them (gone.drop_found), logged as at a
start. stats, which lists sessions/ anyway, says what it finds meanwhile and has the look run at
once (Index.gone_found). A failure (a full disk) is logged once and tried again at the next look.
Kept apart from catchup.py, which catches up what is there; this drops what is no longer there.
"""

import asyncio
import contextlib
import logging

from memoryd.index import gone
from memoryd.writer import BACKGROUND
from proto.plural import counted

log = logging.getLogger("memoryd")

LOOK_SECONDS = 30.0  # as the catch-up's retry at its slowest: what stats says recall waits for


class RemovedLook:
    """When the next look is due, and what sets it off sooner (stats, from a reader thread). A
    timer, not a task that sleeps: nothing is left pending when memoryd's loop ends; a task runs
    only for the look itself."""

    def __init__(self, service):
        self.service = service
        self.task: asyncio.Task | None = None  # the look in flight, if any
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._again = False  # set off while a look ran: another right after it
        self._said: str | None = None  # the last failure logged, so the next one alike is not
        service.index.gone_found = self.wake

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._due_in(LOOK_SECONDS)

    def wake(self) -> None:
        """From any thread: stats found a removed session, or memoryd stops; look now rather
        than in up to LOOK_SECONDS (or end)."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: memoryd has stopped
            loop.call_soon_threadsafe(self._due_in, 0)

    def _due_in(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        if self.service.stopping.is_set() or self._loop is None:
            return
        self._timer = self._loop.call_later(seconds, self._due)

    def _due(self) -> None:
        self._timer = None
        if self.service.stopping.is_set() or self._loop is None:
            return
        if self.task is not None and not self.task.done():
            self._again = True
            return
        self.task = self._loop.create_task(self._look())

    async def _look(self) -> None:
        try:
            if self.service.index.catching_up is None:  # the start's catch-up drops its own
                await self.once()
        finally:
            again, self._again = self._again, False
            self._due_in(0 if again else LOOK_SECONDS)

    async def once(self) -> int:
        """Drop the sessions whose log is gone now; how many (0 after a failure, logged)."""
        service, index = self.service, self.service.index
        try:
            found = await service._read(_looked, index)
            removed = 0
            if found:
                removed = await service._write(gone.drop_found, index, found, priority=BACKGROUND)
        except Exception as error:  # noqa: BLE001 - tried again at the next look
            said = f"{type(error).__name__}: {error}"
            if said != self._said and not service.stopping.is_set():
                log.warning(
                    "index %s: sessions removed from sessions/ not dropped now, tried again in"
                    " %d s: %s",
                    index.path,
                    LOOK_SECONDS,
                    said,
                )
            self._said = said
            return 0
        self._said = None
        if removed:
            log.info(
                "index %s: %s removed from sessions/ while memoryd ran dropped",
                index.path,
                counted(removed, "session"),
            )
        return removed


def _looked(index) -> list[str]:
    with index.reader() as conn:
        return gone.looked(conn, index.home)
