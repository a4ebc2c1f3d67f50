"""The truncation of the index's WAL a forget owes (index/walowed.py), tried again on a timer.

The writer tries it after each of its transactions and at each open of the index; when the read
that kept the WAL full ends while nothing writes (no session speaks, the owner writes nothing),
the old frames would keep the forgotten text until the next write. So every RETRY_SECONDS while it
is owed, a short writer job at the lowest priority tries it, without waiting for the read (about
15 µs while one still holds the file), set off by a timer (ticker.py). A failure (the index not
open, a restore stopped part way) is logged once and tried again at the next tick.
"""

import logging

from memoryd.ticker import Ticker
from memoryd.writer import BACKGROUND

log = logging.getLogger("memoryd")

RETRY_SECONDS = 10.0


class WalRetry(Ticker):
    """The timer of the tries, started with the catch-up once memoryd's loop runs."""

    def __init__(self, service):
        super().__init__(service)
        self._said: str | None = None  # the last failure logged, so the next one alike is not

    def start(self) -> None:
        self._bind()
        self.service.index.wal_owed.retried_every = RETRY_SECONDS  # what a forget's answer says
        self._due_in(RETRY_SECONDS)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._loop = None

    def _busy(self) -> None:
        self._due_in(RETRY_SECONDS)

    def _job(self):
        if not self.service.index.wal_owed.owed:
            self._due_in(RETRY_SECONDS)
            return None
        return self._try()

    async def _try(self) -> None:
        service = self.service
        try:
            await service._write(_try_owed, service.index, priority=BACKGROUND)
            self._said = None
        except Exception as error:  # noqa: BLE001 - tried again at the next tick
            said = f"{type(error).__name__}: {error}"
            if said != self._said and not service.stopping.is_set():
                log.warning(
                    "index %s-wal: not emptied now, tried again in %d s: %s",
                    service.index.path,
                    RETRY_SECONDS,
                    said,
                )
            self._said = said
        finally:
            self._due_in(RETRY_SECONDS)


def _try_owed(index) -> bool:
    """On the writer: the truncation owed tried; whether it is still owed."""
    return index.wal_owed.try_owed(index._write())
