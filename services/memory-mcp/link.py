"""The one request memory-mcp sends to memoryd: memory_call on the broker socket, bounded in time.

memory_call goes to the broker socket as brokerd sends it, and nothing else is ever sent: not
memory_block (the block is rendered from the files, blockfiles.py), not session_updated, not the
owner's commands. memory-mcp connects to no other socket of memoryd's.

A memoryd that is down, or slower than the timeout, is one fixed sentence naming the runbook entry
memoryd-unreachable; the client never waits longer than the timeout. A memoryd that refuses is
said as brokerd says it.

At most MOST_CALLS calls are with memoryd at once, whatever the client does: a call the client
cancelled is still seen through (a write memoryd got is applied), so it holds its place until
memoryd answers it or the timeout ends it, and a call past the bound is answered at once without
being sent (MemorydBusy). Without it, a client that cancels each call as it sends it would have
memory-mcp hold one connection to memoryd per call, as many as it sends within the timeout,
crowding the broker socket the real agent's calls go through.

A memory write that reached memoryd and got no answer (the timeout, or memoryd closing the
connection) may have been applied all the same: memoryd finishes what it read. It is never said to
have failed; the answer says it may have been applied and where to look (MemorydUncertain).
"""

import logging
from pathlib import Path

from memory_mcp.errors import MemorydBusy, MemorydRefused, MemorydUncertain, MemorydUnreachable
from proto.client import RemoteError, arequest
from proto.errors import ProtoError, UnexpectedReply, Unreachable
from proto.messages import MemoryCall, ToolResponse

log = logging.getLogger("memory_mcp.link")

MEMORYD_UNREACHABLE = (
    "memoryd did not answer; memory calls fail until it is back (runbook: memoryd-unreachable)"
)
MEMORYD_WRONG_REPLY = "memoryd answered with something unexpected (runbook: memoryd-unreachable)"


# Calls with memoryd at once, at most: as many as requests memory-mcp reads ahead of its answers
# (inflight.MOST), so a client that cancels nothing never meets it.
MOST_CALLS = 64


def busy_text(timeout: float) -> str:
    return (
        f"not sent: {MOST_CALLS} calls are with memoryd already (cancelled ones included, since "
        f"a call sent is seen through); try again once they end, within {timeout:g} seconds"
    )


def write_unknown_text(timeout: float) -> str:
    return (
        f"memoryd did not answer in {timeout:g} seconds, after the write was sent: it may have "
        "been applied; the owner can check with `bxctl memory log` before it is tried again "
        "(runbook: memoryd-unreachable)"
    )


def call_refused_text(reason: str) -> str:
    return f"memoryd refused the call: {reason}"


class Memoryd:
    def __init__(self, broker_socket: Path, timeout: float):
        self.broker_socket = broker_socket
        self.timeout = timeout
        self.calls = 0  # calls sent to memoryd and not yet answered (the end of stdin waits)
        self.writes = 0  # the memory writes among them (said if the client closes stdout)
        self._full = False  # MOST_CALLS reached, and said in the log

    async def call(self, call: MemoryCall) -> ToolResponse:
        if self.calls >= MOST_CALLS:
            if not self._full:  # one line when the bound is reached, not one per call past it
                log.warning("%d calls are with memoryd: calls past them are refused", self.calls)
            self._full = True
            raise MemorydBusy(busy_text(self.timeout))
        self._full = False
        write = int(call.request.tool == "memory")
        self.calls += 1
        self.writes += write
        try:
            return await self._call(call)
        finally:
            self.calls -= 1
            self.writes -= write

    async def _call(self, call: MemoryCall) -> ToolResponse:
        session = call.request.session
        try:
            return await arequest(
                self.broker_socket, call, timeout=self.timeout, reply=ToolResponse
            )
        except RemoteError as e:
            log.warning("session %s: memoryd refused: %s", session, e)
            raise MemorydRefused(call_refused_text(str(e))) from None
        except UnexpectedReply as e:
            log.warning("session %s: memoryd answered %s", session, e.got)
            raise MemorydRefused(MEMORYD_WRONG_REPLY) from None
        except Unreachable as e:
            log.warning("session %s: %s", session, e)
            raise MemorydUnreachable(MEMORYD_UNREACHABLE) from None
        except ProtoError as e:
            log.warning("session %s: %s", session, e)
            if call.request.tool == "memory":  # sent, so perhaps applied
                raise MemorydUncertain(write_unknown_text(self.timeout)) from None
            raise MemorydUnreachable(MEMORYD_UNREACHABLE) from None
