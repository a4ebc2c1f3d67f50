"""The two requests memory-mcp sends to memoryd, each bounded in time.

memory_call goes to the broker socket, as brokerd sends it. memory_block goes to the loopd socket,
where memoryd serves the block to every new session: asking memoryd for it, rather than rendering
the files here, gives the client the very text a new session would get (the same code, the same
memoryd version, the same refusal when a file is over its limit), whatever this host has
installed. Nothing else is ever sent: not session_updated, not the owner's commands.

A memoryd that is down, or slower than the timeout, is one fixed sentence naming the runbook entry
memoryd-unreachable; the client never waits longer than the timeout. A memoryd that refuses is
said as brokerd says it for a call, and as loopd says it for a block (memory-unavailable).
"""

import logging
from pathlib import Path

from memory_mcp.errors import MemorydRefused, MemorydUnreachable
from proto.client import RemoteError, arequest
from proto.errors import ProtoError
from proto.messages import MemoryBlock, MemoryBlockReply, MemoryCall, ToolResponse

log = logging.getLogger("memory_mcp.link")

MEMORYD_UNREACHABLE = (
    "memoryd did not answer; memory calls fail until it is back (runbook: memoryd-unreachable)"
)
MEMORYD_WRONG_REPLY = "memoryd answered with something unexpected (runbook: memoryd-unreachable)"


def call_refused_text(reason: str) -> str:
    return f"memoryd refused the call: {reason}"


def block_refused_text(reason: str) -> str:
    return f"memoryd refused the memory block: {reason} (runbook: memory-unavailable)"


class Memoryd:
    def __init__(self, broker_socket: Path, block_socket: Path, timeout: float):
        self.broker_socket = broker_socket
        self.block_socket = block_socket
        self.timeout = timeout

    async def call(self, call: MemoryCall) -> ToolResponse:
        try:
            reply = await self._ask(self.broker_socket, call, call.request.session)
        except RemoteError as e:
            raise MemorydRefused(call_refused_text(str(e))) from None
        if not isinstance(reply, ToolResponse):
            log.warning(
                "session %s: memoryd answered %s", call.request.session, type(reply).__name__
            )
            raise MemorydRefused(MEMORYD_WRONG_REPLY)
        return reply

    async def block(self, session: str) -> str:
        try:
            reply = await self._ask(self.block_socket, MemoryBlock(), session)
        except RemoteError as e:
            raise MemorydRefused(block_refused_text(str(e))) from None
        if not isinstance(reply, MemoryBlockReply):
            log.warning("session %s: memoryd answered %s", session, type(reply).__name__)
            raise MemorydRefused(MEMORYD_WRONG_REPLY)
        return reply.text

    async def _ask(self, path: Path, message, session: str):
        try:
            return await arequest(path, message, timeout=self.timeout)
        except RemoteError as e:
            log.warning("session %s: memoryd refused: %s", session, e)
            raise
        except ProtoError as e:
            log.warning("session %s: %s", session, e)
            raise MemorydUnreachable(MEMORYD_UNREACHABLE) from None
