"""The look, while memoryd runs, for sessions the owner removed from sessions/.

The index drops a removed session's rows at the catch-up after a start and when session_updated
names it (index/gone.py); a finished conversation the owner removes while memoryd runs sends no
session_updated again, so without this look recall would serve it until memoryd restarts, for
weeks. Every LOOK_SECONDS, once the start's catch-up is done, a reader takes the sessions the
index holds whose log is gone, its folder removed or the log alone (a row per session held, then
one lstat each with the connection given back), and the writer drops them (gone.drop_found),
logged as at a start. A log removed from a folder that stays changes neither sessions/ nor
anything but that folder, so nothing cheaper than a stat per session tells it: a stat of its
folder, compared with the last look's, costs the same as one of its log, and a change within a
tick of the file system's clock would leave the folder's times as they were. At 10,000 sessions
held the look took 0.1 to 0.4 s of a reader on a loaded 2-core machine (the stats most of it),
every 30 s. stats, which looks at every log anyway, sets the look off at once
(Index.gone_found). A failure (a full disk) is logged once and tried again at the next look. Kept
apart from catchup.py, which catches up what is there; this drops what is no longer there.
"""

import contextlib
import logging

from memoryd.index import gone
from memoryd.ticker import Ticker
from memoryd.writer import BACKGROUND
from proto.plural import counted

log = logging.getLogger("memoryd")

LOOK_SECONDS = 30.0  # as the catch-up's retry at its slowest: what stats says recall waits for


class RemovedLook(Ticker):
    """When the next look is due (a timer, ticker.py), and what sets it off sooner (stats, from a
    reader thread)."""

    def __init__(self, service):
        super().__init__(service)
        self._again = False  # set off while a look ran: another right after it
        self._named: set[str] = set()  # sessions stats found gone, dropped at the next look
        self._said: str | None = None  # the last failure logged, so the next one alike is not
        service.index.gone_found = self.wake

    def start(self) -> None:
        self._bind()
        self._due_in(LOOK_SECONDS)

    def wake(self, sessions: list[str] | None = None) -> None:
        """From any thread: stats found these sessions gone, or memoryd stops; look now rather
        than in up to LOOK_SECONDS (or end)."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: memoryd has stopped
            loop.call_soon_threadsafe(self._woken, list(sessions or ()))

    def _woken(self, sessions: list[str]) -> None:
        self._named.update(sessions)
        self._due_in(0)

    def _busy(self) -> None:
        self._again = True

    def _job(self):
        return self._look()

    async def _look(self) -> None:
        service = self.service
        try:
            # The start's catch-up drops its own; a restore to finish refuses the index's use.
            if service.index.catching_up is None and service.unfinished is None:
                await self.once()
        finally:
            again, self._again = self._again, False
            self._due_in(0 if again else LOOK_SECONDS)

    async def once(self) -> int:
        """Drop the sessions whose log is gone now; how many (0 after a failure, logged)."""
        service, index = self.service, self.service.index
        named, self._named = sorted(self._named), set()
        try:
            found = sorted({*named, *await service._read(_looked, index)})
            removed = 0
            if found:
                removed = await service._write(gone.drop_found, index, found, priority=BACKGROUND)
        except Exception as error:  # noqa: BLE001 - tried again at the next look
            self._named.update(named)
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
    """On a reader: the sessions the index holds whose log is gone, its folder removed or not
    (none while sessions/ is not a folder memoryd can list: gone.logs_gone)."""
    with index.reader() as conn:
        held = gone.held(conn)
    return gone.logs_gone(index.home, held)
