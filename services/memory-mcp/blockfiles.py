"""The memory block, rendered from {home}/memory/ with memoryd's own code.

memory-mcp sends memoryd nothing but memory_call on the broker socket (design section 8), so it
does not ask for the block: it builds it from soul.md, memory.md and user.md with
memoryd.public.memory_block, the very function memoryd answers loopd's memory_block with. The text
is the one a new session gets, an entry left out (it fails the check, or repeats one) is left out
here too, and a file over its limit, missing, unreadable or a symbolic link refuses the block with
memoryd's reason. An entry whose class is above max_class (--max-class, which the owner sets to
memoryd's [index] max_class; default private, memoryd's default) is left out as memoryd leaves it
out, its class found by walking the edit journal ({home}/memory/edits/) back: memory-mcp has
neither memoryd's configuration nor its journal index, and a lower value only leaves out more.
memoryd's file primitives open each file inside its folder with O_NOFOLLOW and read only regular
files, so no link is followed and no FIFO is waited on. This needs read access to {home}/memory,
which the owner running memory-mcp on the host has.

The files are read in one worker thread, off the event loop, and the wait for it is bounded by
--timeout: a read that takes longer (a stalled disk) is an error at the timeout, never a hang. At
most one read runs at a time; a request that comes while a stalled one still runs waits behind it
and times out in turn, so a stalled disk costs one thread, not one per request. The requests
waiting count as requests being worked on (waiting): stdin is not read past 64 of them. The thread
is a daemon, so a stalled read never keeps memory-mcp from exiting when the client closes stdin.
"""

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path

from memory_mcp.errors import BlockUnavailable
from memoryd.public import MemorydError, memory_block

log = logging.getLogger("memory_mcp.blockfiles")


def cannot_build_text(reason: str) -> str:
    return f"the memory block cannot be built: {reason} (runbook: memory-unavailable)"


def too_slow_reason(folder: Path, timeout: float) -> str:
    return f"reading {folder} took longer than {timeout:g} seconds"


class BlockFiles:
    """Builds the block from {home}/memory/ in one daemon worker thread, each wait bounded."""

    def __init__(
        self,
        home: Path,
        timeout: float,
        build: Callable[[Path], str] | None = None,
        max_class: str = "private",
    ):
        self.home = home
        self.timeout = timeout
        self._build = build or partial(memory_block, max_class=max_class)
        self._jobs: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        # requests waiting for a read: stdin is not read past them meanwhile (inflight.room)
        self.waiting = 0

    async def read(self, session: str) -> str:
        """The block text; BlockUnavailable with the sentence the client is shown."""
        job: Future = Future()
        self._start_worker()
        self._jobs.put(job)
        self.waiting += 1
        try:
            return await asyncio.wait_for(asyncio.wrap_future(job), self.timeout)
        except TimeoutError:
            reason = too_slow_reason(self.home / "memory", self.timeout)
        except MemorydError as e:
            reason = str(e)
        except Exception:
            log.exception("session %s: building the memory block failed", session)
            reason = "an internal error (memory-mcp's log has the details)"
        finally:
            self.waiting -= 1
            job.cancel()  # a job still queued is dropped; one already running finishes unseen
        log.warning("session %s: the memory block cannot be built: %s", session, reason)
        raise BlockUnavailable(cannot_build_text(reason))

    def _start_worker(self) -> None:
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="memory-block", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if not job.set_running_or_notify_cancel():
                continue
            try:
                job.set_result(self._build(self.home))
            except BaseException as e:  # handed to the waiting request, which decides
                job.set_exception(e)
