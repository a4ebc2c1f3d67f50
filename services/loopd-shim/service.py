"""The control socket's three messages: start a session, the owner speaks, the assistant answers.

A turn is the assistant's message and the results of its tool calls, appended in order: the
assistant record, then one tool_result per call, each with the label of whoever answered it (when
the log runs out of room, what stands for a result and what the turn is told: turnlog.py). A turn
that ends without tool calls is finished, and memoryd is told (best effort) so its index can catch
up. Messages to one session are handled one at a time, so its log stays in order.

A session is never started as "owner", though proto's pattern takes it: memoryd journals the
owner's own memory edits as session "owner" and `bxctl memory log` and `show` print only that
name, so a session's write under it would read as the owner's (memoryd refuses such a write too).
"""

import asyncio
import base64
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import ValidationError

from loopd_shim import core_tools
from loopd_shim.broker import UNLABELLED, ToolBroker
from loopd_shim.config import read_system_prompt
from loopd_shim.errors import SessionExists, SessionLogFailed, SessionNameRefused, TurnRefused
from loopd_shim.memory import MemorySource
from loopd_shim.opensessions import OpenSessions
from loopd_shim.replyroom import TurnReply
from loopd_shim.sessions import SessionStore, assemble_system
from loopd_shim.turnlog import TurnLog
from proto.errors import InvalidArguments
from proto.labels import Label
from proto.messages import (
    AssistantMessage,
    AssistantResults,
    Body,
    Ok,
    OwnerMessage,
    SessionStart,
    SessionStarted,
    ToolCall,
    ToolRequest,
    ToolResultOut,
)
from proto.records import AssistantRecord, UserRecord, now_rfc3339

CONTROL_KINDS = ("session_start", "owner_message", "assistant_message")

log = logging.getLogger("loopd_shim.service")

# Names the memory journal gives the owner's own edits (memoryd's trust/caller.OWNER_SESSION).
RESERVED_SESSIONS = ("owner",)
RESERVED = (
    'the session id "{session}" is refused: it is the name the owner\'s own memory edits are'
    " journalled under (bxctl memory log); start the session under another id"
)


def new_session_id() -> str:
    """s- and 26 random base32 characters."""
    return "s-" + base64.b32encode(os.urandom(16)).decode("ascii").rstrip("=").lower()


class SessionLocks:
    """One lock per session, kept only while a message of that session holds or waits for it:
    a peer naming endless sessions that do not exist must not grow loopd-shim."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, session: str) -> AsyncIterator[None]:
        lock, users = self._held.get(session, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._held[session] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._held[session]
            if users == 1:
                del self._held[session]
            else:
                self._held[session] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._held)


def denied(root: Path, e: PermissionError) -> str:
    """One line for a session file or folder loopd-shim may not use, and what mends it."""
    where = e.filename or root
    return (
        f"loopd-shim cannot use {where}: {e.strerror or 'Permission denied'}; nothing was done"
        f" (the sessions folder {root} must be loopd-shim's own, 0700: scripts/stack up gives"
        " it back)"
    )


class LoopService:
    def __init__(
        self,
        sessions: SessionStore,
        system_prompt: Path,
        memory: MemorySource,
        broker: ToolBroker,
        open_sessions: OpenSessions | None = None,
    ):
        self.sessions = sessions
        self.open = open_sessions or OpenSessions()
        self.turns = TurnLog(sessions)
        self.system_prompt = system_prompt
        self.memory = memory
        self.broker = broker
        self._locks = SessionLocks()

    async def handle(self, message: Body) -> Body:
        try:
            if isinstance(message, SessionStart):
                return await self.start(message)
            if isinstance(message, OwnerMessage):
                return await self.owner_message(message)
            if isinstance(message, AssistantMessage):
                return await self.assistant_message(message)
        except PermissionError as e:
            # The sessions folder (or a session's) lost its modes or its owner: the owner's to
            # mend, said in one line, never "internal error" with a traceback in the log.
            raise SessionLogFailed(denied(self.sessions.root, e)) from None
        raise TurnRefused(f"{type(message).__name__} is not served here")

    async def start(self, message: SessionStart) -> SessionStarted:
        """Ask memoryd for the block and freeze the baseline; nothing is written if it refuses."""
        session = message.session or new_session_id()
        if session in RESERVED_SESSIONS:
            log.info(
                "session %s: start refused: the name the owner's edits are journalled under",
                session,
            )
            raise SessionNameRefused(RESERVED.format(session=session))
        counted = self.open.reserve(session)
        try:
            baseline = await self._create(session)
        except BaseException:
            if counted:
                self.open.release(session)
            raise
        return SessionStarted(session=session, system=baseline["system"], tools=baseline["tools"])

    async def _create(self, session: str) -> dict:
        # Asked again, under the session's lock, when the folder is made.
        refused = await asyncio.to_thread(self.sessions.refused, session)
        if refused is not None:
            raise SessionExists(refused)
        system_md = read_system_prompt(self.system_prompt)
        block = await self.memory.block()
        tools = [dict(tool) for tool in core_tools.CORE_TOOLS]
        async with self._locks.hold(session):
            return await asyncio.to_thread(
                self.sessions.create, session, assemble_system(system_md, block), tools
            )

    async def owner_message(self, message: OwnerMessage) -> Ok:
        record = UserRecord(time=now_rfc3339(), content=message.content)
        async with self._locks.hold(message.session):
            self.sessions.require(message.session)
            self.open.used(message.session)
            await asyncio.to_thread(self.sessions.append, message.session, record)
        log.info("session %s: owner message appended", message.session)
        return Ok()

    async def assistant_message(self, message: AssistantMessage) -> AssistantResults:
        session, calls = message.session, message.tool_calls
        if not (message.content or message.reasoning_content or calls):
            raise TurnRefused("an assistant message needs content or tool calls")
        if len({call.id for call in calls}) != len(calls):
            raise TurnRefused("tool call ids must be unique within a message")
        record = AssistantRecord(
            time=now_rfc3339(),
            content=message.content,
            reasoning_content=message.reasoning_content,
            tool_calls=calls,
        )
        # Each result is logged whole, and kept only as far as the reply can carry it.
        reply = TurnReply(session, len(calls))
        async with self._locks.hold(session):
            self.sessions.require(session)
            self.open.used(session)
            await asyncio.to_thread(self.turns.begin, session, record, calls)
            for index, call in enumerate(calls):
                reason = await asyncio.to_thread(self.turns.no_room, session, calls[index:])
                if reason is not None:
                    reply.add(await asyncio.to_thread(self.turns.not_run, session, call, reason))
                    continue
                result = await self._run(session, call)
                logged = await asyncio.to_thread(self.turns.result, session, result, calls[index:])
                reply.add(*logged)
        log.info("session %s: assistant turn appended with %d tool calls", session, len(calls))
        results = reply.results()
        if not calls:
            try:
                await self.memory.session_updated(session)
            except Exception as e:  # best effort (spec 9): one line, and the turn still stands
                log.warning("session %s: session_updated failed: %s", session, e)
        return AssistantResults(results=results)

    async def _run(self, session: str, call: ToolCall) -> ToolResultOut:
        """One tool call's result: answered here (clock, find_tool) or by brokerd-shim."""
        tool, arguments = call.name, call.arguments
        try:
            if tool == "call_tool":
                tool, arguments = core_tools.unwrap_call_tool(arguments)
            if tool in core_tools.LOCAL_TOOLS:
                output = core_tools.run_local(tool, arguments)
                return _result(call, True, output, core_tools.LOCAL_LABEL)
        except InvalidArguments as e:
            return _result(call, False, str(e), core_tools.LOCAL_LABEL)
        try:
            request = ToolRequest(session=session, call_id=call.id, tool=tool, arguments=arguments)
        except ValidationError:
            return _result(call, False, f"{tool[:64]!r} is not a tool name", core_tools.LOCAL_LABEL)
        response = await self.broker.call(request)
        # ToolBroker.call already puts UNLABELLED on an answer without a label.
        label = UNLABELLED if response.label is None else response.label
        return _result(call, response.ok, response.output, label)


def _result(call: ToolCall, ok: bool, output: str, label: Label) -> ToolResultOut:
    return ToolResultOut(call_id=call.id, name=call.name, ok=ok, output=output, label=label)
