"""Where the memory block comes from, and who hears that a session has new records.

The service takes a MemorySource explicitly, so it cannot start without one: MemorydClient speaks
to memoryd's loopd socket (spec 7); tests pass a fake memoryd on a socket, or their own source.
"""

import logging
from pathlib import Path
from typing import Protocol

from loopd_shim.errors import MemoryUnavailable
from proto.client import arequest
from proto.errors import ProtoError, UnexpectedReply
from proto.messages import MemoryBlock, MemoryBlockReply, SessionUpdated

BLOCK_TIMEOUT = 10.0
UPDATED_TIMEOUT = 5.0

log = logging.getLogger("loopd_shim.memory")


class MemorySource(Protocol):
    async def block(self) -> str:
        """The memory block; MemoryUnavailable when it cannot be had."""
        ...

    async def session_updated(self, session: str) -> None:
        """Tell memory the session has new records. Best effort: never raises."""
        ...


class MemorydClient:
    """memoryd, over {home}/run/loop-memory/memory.sock or [memory] socket."""

    def __init__(self, socket: Path):
        self.socket = socket

    async def block(self) -> str:
        try:
            reply = await arequest(
                self.socket, MemoryBlock(), timeout=BLOCK_TIMEOUT, reply=MemoryBlockReply
            )
        except UnexpectedReply as e:
            raise MemoryUnavailable(f"memoryd answered {e.got}, not the block") from None
        except ProtoError as e:
            raise MemoryUnavailable(str(e)) from None
        return reply.text

    async def session_updated(self, session: str) -> None:
        try:
            await arequest(self.socket, SessionUpdated(session=session), timeout=UPDATED_TIMEOUT)
        except ProtoError as e:
            log.warning("session %s: session_updated not delivered to memoryd: %s", session, e)
