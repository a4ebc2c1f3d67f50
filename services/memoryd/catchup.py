"""The catch-up of the index with notes.md and the session logs, each part a job for the writer
(service.py): every log after a start, in the background at the writer's lowest priority while
the sockets already serve (index.catching_up says how far it is), and one session's new records
when its turn ends (session_updated). notes.md is read a part at a time too (index/notesparts.py):
a part run after a write or before a recall that leaves some hands the rest to this catch-up.

First the sessions the index holds whose log is gone (the owner removed sessions/<id>/) leave it:
the start's listing of sessions/ is compared with the sessions the index holds (index/gone.py);
those removed while memoryd runs leave it at the look started beside this catch-up
(removedlook.py).
notes.md and each log are caught up on their own. A log memoryd may not read (a link, a FIFO, a
name out of pattern) is skipped until the next start, as the index logs. A damaged index or a
restore stopped part way ends the catch-up: the reindex or restart they call for catches up
everything. Any other failure -- a link or a folder at memory/forgotten.jsonl, a full disk --
leaves that file or log for later: one log line says which file and what is wrong, and what is
left is tried again after RETRY_FIRST seconds (doubling up to RETRY_MOST), or at once when a turn
ends or a write is made, so that the catch-up resumes once the owner fixes the cause, without a
restart. A session_updated that fails so is left to it too, and so is a changed recall mode's
build that found no room (index.mode_waiting). Once every log was tried, the start's catch-up no
longer counts as running (index.catching_up): the logs still left, with why, are
index.not_indexed, which recall and `bxctl memory stats` report for as long as they stay so. It
ends when memoryd stops (service.stopping). sessions/ that memoryd cannot list when the catch-up
begins (its mode, its owner after a copy, a file in its place) lists no log: memoryd serves what
the index holds, and sessions/ is listed again until it can be, its logs then caught up here
(listagain.py).

A log the index has read to its end, as it is now (the same file, as long as the offset read), is
counted as read at once, without a writer job (index/unchanged.py): a restart's catch-up costs what
is new, not what every session there ever was costs.
Those are counted first; then a changed recall mode's tables are built, a part at a time, each
part a writer job at the lowest priority, so that memory calls run between parts
(index/modeprep.py prepare_mode_part), and the logs are caught up after it.
"""

import asyncio
import contextlib
import logging
import os

from memoryd.data.lay import Unfinished
from memoryd.errors import ForgottenUnreadable, IndexDamaged, NotesUnreadable, SessionUnknown
from memoryd.index import carryfile, unchanged
from memoryd.listagain import ListAgain
from memoryd.removedlook import RemovedLook
from memoryd.walretry import WalRetry
from memoryd.writer import BACKGROUND
from proto.files import NotRegular, TooLarge
from proto.plural import counted

log = logging.getLogger("memoryd")

RETRY_FIRST = 1.0  # seconds before what the catch-up left is tried again
RETRY_MOST = 30.0
# Failures a retry cannot mend: the reindex or the restart they call for catches everything up.
# A full disk is not among them (IndexUnwritable, not IndexDamaged): it is tried again.
GIVE_UP = (IndexDamaged, Unfinished)
NOTES = ""  # notes.md among what is left to catch up (a session's name is never empty)


def problem(error: BaseException, of: object = None, called: str | None = None) -> str:
    """What went wrong in a few words, naming the file when the error does and it is not of,
    the file the words are about already (a file opened inside its folder is named by its name
    alone); called: the name to give of when the error is about it."""
    if isinstance(error, (NotRegular, TooLarge)):
        return str(error)  # "PATH is a FIFO, not a regular file"
    if isinstance(error, ForgottenUnreadable):
        return error.short
    if isinstance(error, NotesUnreadable):
        return str(error)  # the index keeps notes.md's rows: said in its own words
    if isinstance(error, OSError):
        what = error.strerror or str(error)
        if not _names_no_other(error, of):
            return f"{error.filename}: {what}"
        return f"{called}: {what}" if called else what
    return str(error) or type(error).__name__


def _names_no_other(error: OSError, of: object) -> bool:
    """True when error names no file, or names of (a file opened inside its folder is named by
    its name alone)."""
    name = str(error.filename) if error.filename else ""
    return not name or (of is not None and name in (str(of), os.path.basename(str(of))))


class CatchUp:
    """What is left to catch up, and the task catching it up."""

    def __init__(self, service):
        self.service = service
        self.left: list[str] = []  # NOTES and sessions, in order
        self._total: int | None = None  # the start's count of logs, while index.catching_up
        self._read = 0
        self._nudged = asyncio.Event()
        self.task: asyncio.Task | None = None
        self._said: str | None = None  # the last failure logged, so a retry's same one is not
        # notes.md read a part at a time: a part run elsewhere (after a write, before a recall)
        # that left some hands the rest to this catch-up, from the writer thread (notes_left).
        self._loop: asyncio.AbstractEventLoop | None = None
        self._notes_running = False
        service.index.notes_left = self._notes_left
        # Sessions removed while memoryd runs leave the index too, looked for once the start's
        # catch-up is done (removedlook.py).
        self.look = RemovedLook(service)
        # sessions/ that could not be listed when the catch-up began, listed again until it is.
        self.again = ListAgain(self, RETRY_FIRST, RETRY_MOST)
        # The WAL a forget left full while a read held it, emptied on a timer (walretry.py).
        self.walretry = WalRetry(service)

    def start(self, sessions: list[str] | None) -> asyncio.Task:
        self._loop = asyncio.get_running_loop()
        self.task = self._loop.create_task(self.run(sessions))
        self.look.start()
        self.walretry.start()
        return self.task

    async def run(self, sessions: list[str] | None) -> int:
        """Catch up notes.md, then every log in sessions (None: every log under sessions/, or
        none while sessions/ cannot be listed, which is listed again until it can be), until all
        are done (or memoryd stops). Returns the rows added."""
        service = self.service
        index = service.index
        self._loop = asyncio.get_running_loop()
        if sessions is None:
            sessions = await service._read(index.listed)
            if sessions is None:
                sessions = []
                self.again.start()
        self.left = list(dict.fromkeys([NOTES, *sessions, *self.left]))
        self._total, self._read = len(sessions), 0
        index.catching_up = (0, len(sessions))
        try:
            # Counted before a changed mode's build (a read, no writer job): stats and recall say
            # how far the logs are while it runs, not that none was read.
            await self._count_unchanged(sessions)
            # the sockets listen meanwhile; recall says so (a switch to spec drops the old
            # mode's tables in parts the same way, its recall whole)
            if index.mode_pending or index.mode_clearing:
                await self._prepare_mode()
            await self._drop_removed(sessions)
            added = await self._until_done()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # logged; the index keeps what it has, the next start goes on
            log.error("index %s: the catch-up stopped: %s", index.path, problem(error))
            index.catching_up = None
            await self._end_carry()
            return 0
        if service.stopping.is_set():
            return added
        index.catching_up = None
        await self._end_carry()
        self._total = None
        service.caught_up.set()
        log.info(
            "%s: caught up, %s%s",
            index.path,
            counted(added, "new record or note", "new records and notes"),
            "; the session logs once sessions/ can be listed" if self.again.waiting else "",
        )
        service._warm_counts()
        return added

    async def _prepare_mode(self) -> None:
        """A changed recall mode's tables, a part at a time, each a writer job of its own at the
        lowest priority: a memory call waits at most for one part (index/modeprep.py
        prepare_mode_part; a switch to spec's removal of the old tables too). A stop ends it
        between two parts; the next start goes on."""
        index = self.service.index
        while not self.service.stopping.is_set():
            if await self.service._write(index.prepare_mode_part, priority=BACKGROUND):
                return

    async def _drop_removed(self, sessions: list[str]) -> None:
        """Drop the rows of the sessions whose log is gone; a failure is logged and left for the
        next start (session_updated naming one drops it too)."""
        index = self.service.index
        try:
            removed = await self.service._write(index.drop_removed, sessions, priority=BACKGROUND)
        except GIVE_UP:
            raise
        except Exception as error:  # noqa: BLE001 - the logs are caught up all the same
            log.error("index %s: removed sessions not dropped: %s", index.path, problem(error))
            return
        if removed:
            log.info(
                "index %s: %s removed from sessions/ dropped",
                index.path,
                counted(removed, "session"),
            )

    async def _count_unchanged(self, sessions: list[str]) -> None:
        """Count as read at once the logs the index has read to their end as they are now, so
        that a restart's catch-up costs what is new (index/unchanged.py): the others are left to
        the writer, a part at a time."""
        index = self.service.index
        done = await self.service._read(unchanged.unchanged, index, sessions)
        if done:
            self.left = [item for item in self.left if item not in done]
            self._read = len(done)
            index.catching_up = (self._read, len(sessions))

    async def _end_carry(self) -> None:
        """The vectors kept from the index this one replaced were given to every row the
        catch-up added: the embedder computes the rest (index/carryfile.py). Nothing to do, no
        writer job, when there are none (every retry pass of a log left asks)."""
        if not carryfile.waiting(self.service.index.path):
            return
        try:
            await self.service._write(self.service.index.end_carry)
        except Exception as error:  # noqa: BLE001 - the next start ends it
            log.warning("index %s: kept vectors: %s", self.service.index.path, problem(error))

    def later(self, session: str) -> None:
        """A session_updated whose catch-up failed (not the log's own fault), or the rest of
        notes.md (NOTES): left to the catch-up, started again if it had ended."""
        if self.service.stopping.is_set():
            return  # the next start catches it up
        self._loop = asyncio.get_running_loop()
        if session not in self.left:
            self.left.append(session)
        if self.task is None or self.task.done():
            self.task = self._loop.create_task(self._again())
        else:
            self.nudge()

    def more(self, sessions: list[str]) -> None:
        """Logs a listing of sessions/ found after the start's could not list it (listagain.py):
        caught up as at a start, recall saying how far."""
        if self.service.stopping.is_set() or not sessions:
            return
        held = set(self.left)
        # In place: a pass under way takes them too.
        self.left.extend(session for session in sessions if session not in held)
        if self._total is None:
            self._total, self._read = 0, 0
        self._total += len(sessions)
        self.service.index.catching_up = (self._read, self._total)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._again())
        else:
            self.nudge()

    def _notes_left(self) -> None:
        """On the writer: a part of notes.md run outside this catch-up left some; the rest is
        read here, a part at a time at the lowest priority. Before this catch-up has run on a
        loop (memoryd's handlers driven without its start), the next part is queued on the
        writer at that priority instead, each part queuing the next, failures logged once
        (service._index_notes)."""
        loop = self._loop
        with contextlib.suppress(RuntimeError):  # the loop or the writer stopped: memoryd stops
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._notes_later)
            else:
                service = self.service
                service._writer.submit(BACKGROUND, service._unless_unfinished, service._index_notes)

    def _notes_later(self) -> None:
        if not self._notes_running:
            self.later(NOTES)

    async def _notes(self) -> int:
        """Index notes.md a part at a time, each part a job for the writer, until it is all read
        (or memoryd stops: the next start goes on)."""
        index, added = self.service.index, 0
        self._notes_running = True
        try:
            while True:
                added += await self.service._write(self._notes_part, priority=BACKGROUND)
                if index.notes_behind is None or self.service.stopping.is_set():
                    return added
        finally:
            self._notes_running = False

    def _notes_part(self) -> int:
        """On the writer: one part, memoryd's own writes not caught up yet told from the
        owner's as after a write (notesafter.py)."""
        return self.service.index.catch_up_notes(self.service._own_notes.own_from())

    def nudge(self) -> None:
        """A turn ended or a write was made: what is left is tried again now, and sessions/
        listed again if it could not be. memoryd stops: the look for removed sessions ends."""
        if self.left or self.service.index.mode_waiting:
            self._nudged.set()
        self.again.wake()  # sessions/ that could not be listed: tried now (or no more)
        if self.service.stopping.is_set():
            self.look.wake()

    async def _again(self) -> None:
        with contextlib.suppress(Exception):  # _until_done logs its own failures
            added = await self._until_done()
            if not self.service.stopping.is_set():
                log.info(
                    "%s: caught up again, %s",
                    self.service.index.path,
                    counted(added, "new record"),
                )

    async def _until_done(self) -> int:
        added, delay = 0, RETRY_FIRST
        while True:
            self._nudged = asyncio.Event()  # of this loop; a nudge from here on is seen
            added += await self._pass()
            if self._total is not None and not self.service.stopping.is_set():
                # Every log was tried once: the start's catch-up is as far as it can go now.
                # What is left stays in not_indexed (recall and stats say so) rather than
                # "catching up", which would never end while a log stays unreadable.
                self.service.index.catching_up, self._total = None, None
            if self.left:
                # Every log was tried once: what is left (a log memoryd may not read, a full
                # disk) may stay for long, and the embedder must not wait for it.
                await self._end_carry()
            waiting = self.service.index.mode_waiting
            if not (self.left or waiting) or self.service.stopping.is_set():
                self._said = None
                return added
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudged.wait(), delay)
            delay = min(2 * delay, RETRY_MOST)

    async def _pass(self) -> int:
        """Each of what is left once; what fails stays left, the first failure logged."""
        index = self.service.index
        if index.mode_waiting:  # the recall mode's build found no room: once more (it logs)
            await self._prepare_mode()
        added, failed, first = 0, [], None
        why: dict[str, str] = {}
        for at, item in enumerate(self.left):
            if self.service.stopping.is_set():
                failed += self.left[at:]
                break
            try:
                if item == NOTES:
                    added += await self._notes()
                else:
                    added += await self.session(item, BACKGROUND)
            except SessionUnknown as error:
                log.warning("session log %s: skipped: %s", index.home.session_log(item), error)
            except GIVE_UP:
                raise
            except Exception as error:  # left for the next try, said once
                failed.append(item)
                where = (
                    "memory/notes.md"
                    if item == NOTES
                    else f"session log {index.home.session_log(item)}"
                )
                first = first or f"{where}: {problem(error)}"
                if item != NOTES:
                    why[item] = problem(error, index.home.session_log(item))
                continue
            if item != NOTES and self._total is not None:
                self._read = min(self._read + 1, self._total)
                index.catching_up = (self._read, self._total)
        self.left = failed
        index.not_indexed = {s: why.get(s, "not read yet") for s in failed if s != NOTES}
        if first is not None and first != self._said:
            logs = counted(sum(1 for item in failed if item != NOTES), "session log")
            log.error(
                "index %s: the catch-up stopped at %s; %s%s left, tried again in a moment and"
                " when a turn ends or a write is made",
                index.path,
                first,
                logs,
                " and notes.md" if NOTES in failed else "",
            )
        self._said = first
        return added

    async def session(self, session: str, priority: int) -> int:
        """Index a session's new records a part at a time, each part a job for the writer; a
        stop ends it between two parts (the next start reads the rest)."""
        added, done = 0, False
        while not done and not self.service.stopping.is_set():
            more, done = await self.service._write(
                self.service.index.catch_up_session_part, session, priority=priority
            )
            added += more
        return added
