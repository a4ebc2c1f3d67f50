"""A job on memoryd's loop that a timer sets off: the shape the background looks share.

removedlook.py, listagain.py and walretry.py each run a short job now and then (a look at
sessions/, a listing of it, a truncation of the WAL). A timer, not a task that sleeps: nothing is
left pending when memoryd's loop ends, and a task runs only for the job itself. One job at a time:
a tick that finds the last one still running asks the subclass what to do (busy).
"""

import asyncio
from collections.abc import Coroutine


class Ticker:
    """The timer and the job in flight; a subclass says what the job is (job) and when the timer
    may be set at all (armed)."""

    def __init__(self, service):
        self.service = service
        self.task: asyncio.Task | None = None  # the job in flight, if any
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def _bind(self) -> None:
        """Called from memoryd's loop: the timer is set on it from now on."""
        self._loop = asyncio.get_running_loop()

    def _armed(self) -> bool:
        return not self.service.stopping.is_set() and self._loop is not None

    def _due_in(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        if self._armed() and self._loop is not None:
            self._timer = self._loop.call_later(seconds, self._due)

    def _due(self) -> None:
        self._timer = None
        if self.service.stopping.is_set() or self._loop is None:
            return
        if self.task is not None and not self.task.done():
            self._busy()
            return
        job = self._job()
        if job is not None:
            self.task = self._loop.create_task(job)

    def _busy(self) -> None:
        """A tick while the last job runs: by default nothing (the job sets the next tick)."""

    def _job(self) -> Coroutine[None, None, None] | None:
        """The job to run now, or None (having set the next tick itself)."""
        raise NotImplementedError
