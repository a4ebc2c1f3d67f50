"""A session's recall when notes.md changed since the index last read it: answered at once.

Apart from service.py, whose owner's search and stats wait for the writer to catch the index up
(the note numbers they print must be those the index holds), because a session's recall must not
wait for the writer. The writer may be busy for seconds with work queued before the catch-up: a
forget of a note rewrites notes.md first and then scrubs the journal, the recall log and the
exports before it gives the writer back, and notes.md of years is then read a part at a time. A
recall that waited for all that sat for as long (five to ten seconds at 100,000 notes).

So the recall submits the catch-up to the writer (one job, shared by every recall that comes
while it waits) and waits only for the writer to take it up (NOTES_START) and, once it has, for
its one part, whose work indexer.PART_SECONDS bounds (NOTES_PART). Otherwise it answers from the
index as it is, with the line that says notes.md is being caught up (recaller.NOTES_CHANGED).
What the index still holds of a note being forgotten is never recalled meanwhile: the forget
records every key it takes before it rewrites notes.md (data/unfinished.py), and recall leaves
those keys' rows out until the index has let go of them (journal/keptout.hiding).
"""

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from typing import TypeVar

from memoryd.errors import MemorydError
from memoryd.writer import WRITE

log = logging.getLogger("memoryd")
T = TypeVar("T")

# Seconds a recall waits for the writer to begin notes.md's catch-up, then for that part to end.
NOTES_START = 0.2
NOTES_PART = 1.0


class NotesChanged(MemorydError):
    """Raised on a reader, before it reads the index, when notes.md changed since the writer last
    read it: the writer catches the index up, then the read runs again."""


def _retrieved(done: asyncio.Future) -> None:
    """The job's outcome is the writer's to log (service._index_notes); a recall that stopped
    waiting for it leaves nothing unretrieved behind."""
    if not done.cancelled():
        done.exception()


class NotesBehind:
    """The catch-up of notes.md that recalls submitted and wait for (at most briefly), for the
    service that serves them; used on its event loop only."""

    def __init__(self, service) -> None:
        self.service = service
        self._job: concurrent.futures.Future | None = None
        self._said: concurrent.futures.Future | None = None  # the job a recall logged going on

    async def read(self, fn: Callable[[bool], T]) -> T:
        """fn(behind) on a reader: at once when notes.md is as the index read it, else after the
        writer caught the index up, or from the index as it is if the writer is busy (behind:
        True, and fn says so)."""
        service = self.service
        try:
            return await service._read(service._unless_notes_changed, fn, False)
        except NotesChanged:
            pass
        if await self._caught_up():
            return await service._read(fn, False)
        job = self._job
        if job is not None and job is not self._said:
            self._said = job
            log.info(
                "memory/notes.md: changed; recall answers from the index as it is until the"
                " writer, busy now, catches it up"
            )
        return await service._read(fn, True)

    async def _caught_up(self) -> bool:
        """True once the writer ran the catch-up submitted for this change (or one after it)."""
        service = self.service
        job = self._job
        if job is None or job.done():
            try:
                job = service._writer.submit(
                    WRITE, service._unless_unfinished, service._notes_changed
                )
            except RuntimeError:  # the writer is stopping: the index as it is
                return False
            self._job = job
        waited = asyncio.wrap_future(job)
        waited.add_done_callback(_retrieved)
        done, _ = await asyncio.wait({waited}, timeout=NOTES_START)
        if not done and job.running():  # the writer runs it now: one part, bounded
            done, _ = await asyncio.wait({waited}, timeout=NOTES_PART)
        return bool(done)
