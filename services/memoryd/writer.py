"""memoryd's one writer thread, with priorities and deadlines.

Every write to memory/ and to the index runs on this one thread, so writes never race. Jobs wait
in a queue ordered by priority, then by arrival: memory calls and the owner's writes first, then
session_updated, then the catch-up at start. Index work is cut into parts of bounded cost (each a
job of its own), so a memory call waits at most for the part running when it came, never for a
whole catch-up or reindex.

A job may carry a deadline: one that has not started by then is not run, and its future fails
with NotStarted, so its caller can answer that nothing was done. A caller on the event loop
awaits it through in_time, which answers NotStarted when the deadline passes, whatever job the
writer is running then, and takes the job out of the queue so that it never runs later.
"""

import asyncio
import concurrent.futures
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

# Priorities: lower runs first.
WRITE = 0  # memory calls, the owner's undo/accept/reject, the swap of a reindex
SESSION = 1  # session_updated: a turn just finished
BACKGROUND = 2  # the catch-up of every log after a start


class NotStarted(Exception):
    """A job whose deadline passed before the writer reached it; it did not run."""


async def in_time(future: concurrent.futures.Future, deadline: float | None) -> Any:
    """The result of a job submitted with deadline, or NotStarted as soon as the deadline passes
    with the job still queued: a caller is not kept waiting for a long job ahead of it only to
    be told that nothing was done. A job already running is waited for, as it will finish."""
    wrapped = asyncio.wrap_future(future)
    if deadline is None:
        return await wrapped
    try:
        await asyncio.wait({wrapped}, timeout=max(0.0, deadline - time.monotonic()))
    except asyncio.CancelledError:
        wrapped.cancel()  # as awaiting the job would: a queued job is not run, a result dropped
        raise
    if not wrapped.done() and future.cancel():  # still queued: the writer skips it
        wrapped.cancel()
        raise NotStarted
    return await wrapped


class Writer:
    def __init__(self, name: str = "memoryd-writer"):
        self._queue: list[tuple[int, int, float | None, Callable[[], Any], Any]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(
        self, priority: int, fn: Callable[..., Any], *args: Any, deadline: float | None = None
    ) -> concurrent.futures.Future:
        """Queue fn(*args); deadline is a time.monotonic() by which it must have started."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._cond:
            if self._stopping:
                raise RuntimeError("the writer is stopped")
            entry = (priority, next(self._order), deadline, lambda: fn(*args), future)
            heapq.heappush(self._queue, entry)
            self._cond.notify()
        return future

    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._stopping)
                if not self._queue:
                    return
                _, _, deadline, job, future = heapq.heappop(self._queue)
            if not future.set_running_or_notify_cancel():
                continue
            if deadline is not None and time.monotonic() > deadline:
                future.set_exception(NotStarted())
                continue
            try:
                future.set_result(job())
            except BaseException as error:  # handed to the caller, who decides
                future.set_exception(error)

    def shutdown(self, wait: bool = True) -> None:
        """Run what is queued, then stop."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if wait and self._thread is not threading.current_thread():
            self._thread.join()
