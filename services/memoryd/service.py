"""memoryd's handlers: one function per message kind, on top of MemoryStore and Index.

SQLite and file work never run on the event loop. Writes (memory calls, admin commands, indexing,
reindex) go to one writer thread, so they are serialised; reads (the block, recall, log, pending)
go to a small pool of reader threads and may run beside a write. Refusals are answered with their
text: a refused memory call as a tool_response with ok false, anything else as an error.
"""

import asyncio
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from memoryd.errors import EditRefused, MemorydError
from memoryd.index import Index
from memoryd.owner import dispatch as owner_commands
from memoryd.store import MemoryStore
from proto.errors import InvalidArguments
from proto.messages import (
    Body,
    MemoryAdmin,
    MemoryAdminReply,
    MemoryBlock,
    MemoryBlockReply,
    MemoryCall,
    Ok,
    Reindex,
    Reindexed,
    SessionUpdated,
    ToolResponse,
)
from proto.tools import parse_memory, parse_recall

log = logging.getLogger("memoryd")
T = TypeVar("T")

LOOP_KINDS = frozenset({"memory_block", "session_updated"})
BROKER_KINDS = frozenset({"memory_call"})
ADMIN_KINDS = frozenset({"reindex", "memory_admin"})


class MemoryService:
    def __init__(self, store: MemoryStore, index: Index, readers: int = 4):
        self.store = store
        self.index = index
        self.home_lock: int | None = None  # the fd holding index/memoryd.lock (server.py)
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memoryd-writer")
        self._readers = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="memoryd-reader")

    async def _write(self, fn: Callable[..., T], *args) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._writer, fn, *args)

    async def _read(self, fn: Callable[..., T], *args) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._readers, fn, *args)

    def close(self) -> None:
        """Finish the writes in flight, close the index, then let another memoryd in."""
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self.index.close()
        if self.home_lock is not None:
            os.close(self.home_lock)
            self.home_lock = None

    # --- loopd -----------------------------------------------------------------------------------
    async def on_loop(self, message: Body) -> Body:
        if isinstance(message, MemoryBlock):
            return MemoryBlockReply(text=await self._read(self.store.block))
        if isinstance(message, SessionUpdated):
            added = await self._write(self.index.catch_up_session, message.session)
            log.info("session %s: indexed %d new records", message.session, added)
            return Ok()
        raise MemorydError(f"{type(message).__name__} is not served on the loopd socket")

    # --- brokerd ---------------------------------------------------------------------------------
    async def on_broker(self, message: Body) -> Body:
        if not isinstance(message, MemoryCall):
            raise MemorydError(f"{type(message).__name__} is not served on the brokerd socket")
        request = message.request
        try:
            if request.tool == "recall":
                args = parse_recall(request.arguments)
                result = await self._read(
                    lambda: self.index.recall(args.query, args.k, session=request.session)
                )
                return ToolResponse(
                    call_id=request.call_id, ok=True, output=result.text, label=result.label
                )
            if request.tool == "memory":
                args = parse_memory(request.arguments)
                output = await self._write(self._apply, args, message)
                return ToolResponse(call_id=request.call_id, ok=True, output=output, label=None)
        except (InvalidArguments, EditRefused) as e:
            log.info(
                "session %s: %s call %s refused: %s",
                request.session,
                request.tool,
                request.call_id,
                e,
            )
            return ToolResponse(call_id=request.call_id, ok=False, output=str(e), label=None)
        return ToolResponse(
            call_id=request.call_id,
            ok=False,
            output=f"memoryd serves recall and memory, not {request.tool[:64]!r}",
            label=None,
        )

    def _apply(self, args, message: MemoryCall) -> str:
        request = message.request
        output = self.store.call(
            args,
            session=request.session,
            call_id=request.call_id,
            taint=message.taint,
            untrusted=message.untrusted,
        )
        self._index_notes()
        return output

    def _index_notes(self) -> None:
        try:
            self.index.catch_up_notes()
        except MemorydError as e:
            # The write is done and journalled; the index catches up at the next start or reindex.
            log.warning("memory/notes.md: not indexed now: %s", e)

    # --- the owner -------------------------------------------------------------------------------
    async def on_admin(self, message: Body) -> Body:
        if isinstance(message, Reindex):
            logs, records, notes = await self._write(self.index.reindex)
            log.info("reindexed: %d logs, %d records, %d notes", logs, records, notes)
            return Reindexed(logs=logs, records=records, notes=notes)
        if isinstance(message, MemoryAdmin):
            return MemoryAdminReply(text=await self._admin(message.command, message.arg))
        raise MemorydError(f"{type(message).__name__} is not served on the owner socket")

    async def _admin(self, command: str, arg: str) -> str:
        kind, run = owner_commands.lookup(command, arg)
        if kind == "read":
            return await self._read(run, self)
        return await self._write(self._admin_write, run, self)

    def _admin_write(self, action: Callable[..., str], *args) -> str:
        text = action(*args)
        self._index_notes()
        return text
