"""memoryd's handlers: one function per message kind, on top of MemoryStore and Index.

SQLite and file work never run on the event loop. Writes (memory calls, admin commands, indexing)
go to one writer thread (writer.py), so they are serialised, memory calls and the owner's writes
first; index work goes a part at a time, so no write waits behind a whole catch-up. A reindex
builds its new file on a thread of its own and takes the writer only to catch it up and swap it
in. Reads (the block, recall, log, pending) go to a small pool of reader threads and may run
beside a write; a recall of many common words runs in a lane of its own, one at a time
(recall/heaviness.py), so that the others always find a reader. Refusals are answered with
their text: a refused memory call as a tool_response with ok false, anything else as an error.

The catch-up of every log after a start runs in the background (catchup.py), at the writer's lowest
priority, while the sockets already serve; recall says how far it is. What it could not catch up
(a file the owner must fix) it tries again later, and at the next turn or write.

The owner may edit notes.md by hand, and memoryd's own writes change it. A recall or an owner's
search first stats notes.md on its reader (index/notesseen.py): when it changed since the writer
last read it, the writer catches the index up with it (a job of its own, as a write's is) and the
read runs again, so that a note removed by hand is no longer recalled and one added is found. The
owner's search and stats wait for that; a session's recall waits only briefly, and while the
writer is busy answers from the index as it is, saying that notes.md is being caught up
(recall/notesbehind.py). When nothing changed, that costs the one stat.

An answer says what happened: a memory call that the writer has not started
within write_deadline seconds is not applied and is answered so (NOT_APPLIED); once a write is
applied, a failure of the index after it is logged, not answered: the next write, catch-up or start
indexes what was missed. A write is answered once it is journalled: the catch-up of notes.md after
it is a writer job of its own, which may take seconds (notesafter.py).
"""

import asyncio
import contextvars
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import TypeVar

from memoryd import catchup, forgottensweep
from memoryd.brokercalls import BrokerCalls, CallerGone
from memoryd.catchup import CatchUp
from memoryd.config import WRITE_DEADLINE
from memoryd.data.lay import Unfinished
from memoryd.errors import MemorydError, NotSynced, SessionNotIndexed, SessionUnknown
from memoryd.index import forgetsmeanwhile
from memoryd.index.index import Index
from memoryd.index.rebuild import Rebuilder, finish_or_discard
from memoryd.memory.store import MemoryStore
from memoryd.notesafter import OwnNotes
from memoryd.owner import dispatch as owner_commands
from memoryd.owner.args import SearchArg
from memoryd.owner.args import parse as parse_arg
from memoryd.recall import heaviness
from memoryd.recall.heaviness import Heavy
from memoryd.recall.notesbehind import NotesBehind, NotesChanged
from memoryd.recall.recaller import Recaller
from memoryd.search import bm25
from memoryd.trust.witness import Witness
from memoryd.writer import SESSION, WRITE, NotStarted, Writer, in_time
from proto import peer
from proto.messages import (
    Body,
    MemoryAdmin,
    MemoryAdminReply,
    MemoryBlock,
    MemoryBlockReply,
    Ok,
    Reindex,
    Reindexed,
    SessionUpdated,
    reindexed_line,
)
from proto.plural import counted

log = logging.getLogger("memoryd")
T = TypeVar("T")

LOOP_KINDS = frozenset({"memory_block", "session_updated"})
BROKER_KINDS = frozenset({"memory_call"})
ADMIN_KINDS = frozenset({"reindex", "memory_admin"})
NOT_DONE = "memoryd was too busy to start this command in time; nothing was changed. Try again."
# The owner's reads that print note numbers: notes.md is caught up before them, so that the numbers
# are those the index holds now (stats reads notes.md itself). Not forget, whose note:N must name
# the note search or stats showed (data/targets.py).
FRESH_NOTES = frozenset({"search", "stats"})
# The pool a read runs on when its caller names none (_read): the readers, or the heavy lane while
# a heavy recall runs there (in_lanes). Per asyncio task, so only that recall's reads move.
_LANE: ContextVar[ThreadPoolExecutor | None] = ContextVar("memoryd_lane", default=None)


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        index: Index,
        readers: int = 4,
        *,
        write_deadline: float = WRITE_DEADLINE,
        witness: Witness | None = None,
    ):
        self.store = store
        self.index = index
        # Before any transaction of this start, and before the sockets listen: what another
        # program wrote back of what memory/forgotten.jsonl lists leaves the index.
        forgottensweep.sweep(index)
        # Reads each calling session's log on that session's own thread, never on the writer
        # (witness.py); the writer gets the caller already made stricter.
        self.witness = witness
        self.recaller = Recaller(index)  # recall and the recall log (recall.py)
        self.write_deadline = write_deadline
        # The descriptors holding the home folder's lock and index/memoryd.lock (server.py).
        self.home_lock: tuple[int, ...] = ()
        self.caught_up = threading.Event()  # set when the catch-up after the start is done
        self.to_catch_up: list[str] | None = None  # the logs listed at the start (prepare)
        # Set (to the refusal's text) when a restore stopped part way (data/restore.py): memory is
        # then part old, part new, and every read and write of it is refused until a restart
        # finishes the restore. Checked as each job starts, so one queued behind it is refused.
        self.unfinished: str | None = None
        self._writer = Writer()
        self._readers = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="memoryd-reader")
        # The recalls of many common words (seconds each at a million records) run here, one at
        # a time, whoever asks, so that the others always find a reader (recall/heaviness.py).
        self._heavy = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memoryd-heavy")
        # loopd's memory_block reads only the memory files: threads of its own, so that a session
        # starts however many recalls of common words (each up to a core's second at a million
        # records) the readers have queued.
        self._block_readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memoryd-block")
        self._rebuilder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memoryd-reindex")
        self._rebuild = Rebuilder()  # the reindex's build, in a child process (rebuild.py)
        self._reindexing: asyncio.Lock | None = None
        self._catching = CatchUp(self)
        self._broker = BrokerCalls(self)  # recall and memory calls (brokercalls.py)
        # A session's recall after notes.md changed: answered at once (recall/notesbehind.py).
        self.recall_notes = NotesBehind(self)
        self._notes_failed: str | None = None  # why notes.md was last not indexed, once logged
        self._own_notes = OwnNotes(index)  # writes of notes.md not caught up yet (notesafter.py)
        # Set when memoryd begins to stop, before it waits for the requests in flight: a long
        # owner command (an import's batches, a forget's catch-up parts) ends at its next safe
        # point with its own answer of how far it got, so that the stop is prompt.
        self.stopping = threading.Event()

    async def _write(
        self, fn: Callable[..., T], *args, priority: int = WRITE, deadline: float | None = None
    ) -> T:
        future = self._writer.submit(
            priority, self._unless_unfinished, fn, *args, deadline=deadline
        )
        return await in_time(future, deadline)

    def _deadline(self) -> float:
        return time.monotonic() + self.write_deadline

    async def _read(self, fn: Callable[..., T], *args, pool: ThreadPoolExecutor | None = None) -> T:
        loop = asyncio.get_running_loop()
        executor = pool or _LANE.get() or self._readers
        # In the request's context, as asyncio.to_thread runs a function (run_in_executor does
        # not): a long read asks the probe of its caller's connection (proto.peer) whether the
        # caller still waits, an import between its batches.
        run = contextvars.copy_context().run
        return await loop.run_in_executor(executor, run, self._unless_unfinished, fn, *args)

    async def in_lanes(self, run: Callable[[bool], Awaitable[T]], who: str) -> T:
        """run(True) on the readers, where its recall is weighed before it searches; when that
        is heavy (recall/heaviness.py), run(False) in the heavy lane, each of its reads there.
        who names the recall in the one log line of that."""
        try:
            return await run(True)
        except Heavy as heavy:
            log.info("%s: runs in the heavy lane (its words hold %s rows)", who, f"{heavy.rows:,}")
        lane = _LANE.set(self._heavy)
        try:
            return await run(False)
        finally:
            _LANE.reset(lane)

    def _weigher(self, command: str, arg: str) -> Callable[[], None] | None:
        """The owner's search weighed as a session's recall is (Heavy when heavy), else None."""
        checked = parse_arg(command, arg) if command == "search" else None
        if not isinstance(checked, SearchArg):
            return None
        return lambda: heaviness.check(self.index, checked.query, checked.k)

    async def _read_notes_fresh(self, fn: Callable[[], T]) -> T:
        """fn on a reader, once the index holds notes.md as it is now (see the top of this file):
        the owner's reads that print note numbers. A catch-up the writer could not start in time
        is left for the next read or write: fn then answers from the index as it is."""
        try:
            return await self._read(self._unless_notes_changed, fn)
        except NotesChanged:
            pass
        try:
            await self._write(self._notes_changed, deadline=self._deadline())
        except NotStarted:
            log.info("memory/notes.md: changed; not indexed before this read (the writer is busy)")
        return await self._read(fn)

    def _unless_notes_changed(self, fn: Callable[..., T], *args) -> T:
        if self.index.notes_seen.changed():
            raise NotesChanged
        return fn(*args)

    def _notes_changed(self) -> None:
        """On the writer: catch up notes.md unless a job queued before this one already did."""
        if self.index.notes_seen.changed():
            self._index_notes()

    def _unless_unfinished(self, fn: Callable[..., T], *args) -> T:
        if self.unfinished is not None:
            raise Unfinished(self.unfinished)
        return fn(*args)

    def begin_stop(self) -> None:
        """memoryd is stopping: long commands in flight end at their next safe point (see
        stopping), and a reindex's build in flight ends and new ones are refused, at once: the
        reindex waiting for it is answered that it was stopped, the old index untouched; so is
        the build of a changed recall mode's tables (Index.prepare_mode)."""
        self.stopping.set()
        self._catching.nudge()
        self.stop_builds()

    def stop_builds(self) -> None:
        """End a reindex's build and a mode's build in flight, and refuse new ones."""
        self._rebuild.stop()
        self.index.stop_preparing()

    def close(self) -> None:
        """Finish the writes in flight, close the index, then let another memoryd in."""
        self.stopping.set()
        if self._catching.task is not None:
            self._catching.task.cancel()
        self.index.stop_warming(for_good=True)  # a reader counting common terms gives way
        if self.witness is not None:
            self.witness.close()  # its reads stop within a chunk; calls waiting are not applied
        self._rebuild.stop()
        self._rebuilder.shutdown(wait=True)
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._heavy.shutdown(wait=True)
        self._block_readers.shutdown(wait=True)
        self.recaller.close()
        self.index.close()
        for fd in self.home_lock:
            os.close(fd)
        self.home_lock = ()

    # --- loopd -----------------------------------------------------------------------------------
    async def on_loop(self, message: Body) -> Body:
        if isinstance(message, MemoryBlock):
            block = await self._read(self.store.block, pool=self._block_readers)
            return MemoryBlockReply(text=block)
        if isinstance(message, SessionUpdated):
            added = await self._catch_up_session(message.session, SESSION)
            log.info("session %s: indexed %s", message.session, counted(added, "new record"))
            return Ok()
        raise MemorydError(f"{type(message).__name__} is not served on the loopd socket")

    async def _catch_up_session(self, session: str, priority: int) -> int:
        """Index a session's new records a part at a time, each part a job for the writer."""
        self._catching.nudge()
        try:
            return await self._catching.session(session, priority)
        except (SessionUnknown, *catchup.GIVE_UP):
            raise
        except OSError as error:  # the log's own trouble: loopd gets one line, never a traceback
            self._catching.later(session)  # tried again once the cause is gone (catchup.py)
            log_path = self.index.home.session_log(session)
            what = catchup.problem(error, log_path, called=f"sessions/{session}/0.jsonl")
            raise SessionNotIndexed(
                f"the new records of session {session} cannot be indexed now: {what}; they are"
                " indexed once that is mended (bxctl memory stats names the log)"
            ) from None
        except Exception:
            self._catching.later(session)  # tried again once the cause is gone (catchup.py)
            raise

    # --- the catch-up after a start (catchup.py) -------------------------------------------------
    def start_catch_up(self) -> asyncio.Task:
        """Start catching up every log in the background (after the sockets listen)."""
        sessions, self.to_catch_up = self.to_catch_up, None
        # The exact top-k's one check of bm25.py against FTS5 (about 0.1 s), made now on a reader
        # rather than in the first recall that needs it.
        asyncio.get_running_loop().run_in_executor(self._readers, bm25.agrees_with_fts5)
        return self._catching.start(sessions)

    async def catch_up(self, sessions: list[str] | None = None) -> int:
        """Catch up notes.md, then every log under sessions/ (as listed before the sockets
        opened, by prepare), at the writer's lowest priority. Returns the rows added."""
        return await self._catching.run(sessions)

    def _warm_counts(self) -> None:
        """Count the index's common terms on a reader now, rather than in the recalls that need
        them (index/warmcounts.py)."""
        asyncio.get_running_loop().run_in_executor(self._readers, self.index.warm_counts)

    # --- brokerd ---------------------------------------------------------------------------------
    async def on_broker(self, message: Body) -> Body:
        return await self._broker.answer(message)

    def _notes_after(self, before: str | None) -> None:
        """On the writer, as a write that began at before (Index.notes_file) ends: the catch-up
        of notes.md after it is queued as a job of its own, not run before its answer."""
        self._own_notes.wrote(before)
        try:
            self._writer.submit(WRITE, self._unless_unfinished, self._index_notes)
        except RuntimeError:  # the writer is stopping and takes no more jobs: caught up now
            self._index_notes()

    def _index_notes(self, own_from: str | None = None) -> None:
        """On the writer: catch up notes.md; own_from as OwnNotes.own_from takes it."""
        try:
            self.index.catch_up_notes(self._own_notes.own_from(own_from))
        except Exception as e:  # noqa: BLE001 - whatever it is, the write before it stands
            # The write is done and journalled: its answer is the applied one. The index catches
            # up at the next write, start or reindex (notes.md is read from its last offset), or
            # at a recall once notes.md changes again (or, on a full disk, at every recall: the
            # same failure is logged once, not at each).
            said = f"{type(e).__name__}: {e}"
            if said != self._notes_failed:
                log.warning("memory/notes.md: not indexed now, caught up later: %s", said)
            self._notes_failed = said
            return
        if self._notes_failed is not None:
            log.info("memory/notes.md: indexed again")
            self._notes_failed = None

    # --- the owner -------------------------------------------------------------------------------
    async def on_admin(self, message: Body) -> Body:
        if isinstance(message, Reindex):
            logs, records, notes = await self._reindex()
            answer = Reindexed(logs=logs, records=records, notes=notes)
            aside, unread = len(self.index.left_aside), len(self.index.left_out)
            log.info("%s", reindexed_line(answer, aside, unread))
            return answer
        if isinstance(message, MemoryAdmin):
            return MemoryAdminReply(text=await self._admin(message.command, message.arg))
        raise MemorydError(f"{type(message).__name__} is not served on the owner socket")

    async def _admin(self, command: str, arg: str) -> str:
        kind, run = owner_commands.lookup(command, arg)
        if kind == "read":
            gone = peer.current()
            weigh = self._weigher(command, arg)

            def read(weighed: bool) -> str:
                # Queued behind other reads until its caller hung up: nobody reads the answer,
                # and running it would only make a session's recall queued after it wait longer.
                if gone is not None and gone():
                    raise CallerGone
                if weighed and weigh is not None:
                    weigh()
                return run(self)

            async def in_lane(weighed: bool) -> str:
                if command in FRESH_NOTES:
                    return await self._read_notes_fresh(lambda: read(weighed))
                return await self._read(read, weighed)

            try:
                return await self.in_lanes(in_lane, f"memory {command}")
            except CallerGone:
                log.debug("memory %s: not run: its caller stopped waiting", command)
                raise MemorydError(
                    f"memory {command} not run: its caller stopped waiting"
                ) from None
        try:
            text = await self._write(self._admin_write, run, self, deadline=self._deadline())
            self._catching.nudge()
            return text
        except NotStarted:
            log.warning("memory %s: not carried out: not started in time", command)
            raise MemorydError(NOT_DONE) from None

    async def _reindex(self) -> tuple[int, int, int]:
        """Build the new index in a child process, then catch it up and swap it on the writer."""
        if self._reindexing is None:
            self._reindexing = asyncio.Lock()
        async with self._reindexing:
            if self.unfinished is not None:  # its build would read a half-laid notes.md
                raise Unfinished(self.unfinished)
            loop = asyncio.get_running_loop()
            built = await loop.run_in_executor(self._rebuilder, self._rebuild.build, self.index)
            try:
                done = await self._write(finish_or_discard, self.index, built)
            except NotSynced:  # the new file is the index, its folder not synced: said so
                self._after_reindex()
                await self._merge_forgotten()
                raise
            self._after_reindex()
            await self._merge_forgotten()
            return done

    async def _merge_forgotten(self) -> None:
        """The words of what was forgotten during the build, merged out of the file now in use
        (forgetsmeanwhile.py) before the reindex answers; each step a writer job of its own, so
        that memory writes run between them."""

        def on_writer(fn: Callable[..., T], *args) -> T:
            return self._writer.submit(WRITE, fn, *args).result()

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(
            self._rebuilder, forgetsmeanwhile.merge_after, self.index, on_writer
        )

    def _after_reindex(self) -> None:
        for session in self.index.left_out:  # tried again, and named in stats meanwhile
            self._catching.later(session)
        self._warm_counts()

    def _admin_write(self, action: Callable[..., str], *args) -> str:
        before = self.index.notes_file()
        text = action(*args)
        self._notes_after(before)
        return text
