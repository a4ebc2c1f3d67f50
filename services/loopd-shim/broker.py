"""brokerd-shim, as loopd-shim sees it: one tool_request, one tool_response.

Whatever goes wrong on the way is not the model's fault and not a tool's answer: the call fails
with "brokerd did not answer" (or brokerd's refusal) and a private, trusted label. A memory call
that was sent and got no answer may still have been applied (memoryd may have been stalled past
every wait), so its result says so rather than that it failed.
"""

import logging
from pathlib import Path
from typing import Protocol

from loopd_shim.config import BROKER_TIMEOUT
from proto.client import RemoteError, arequest
from proto.errors import ProtoError, UnexpectedReply, Unreachable
from proto.labels import Label
from proto.messages import ToolRequest, ToolRequestMessage, ToolResponse

NO_ANSWER = "brokerd did not answer (runbook: brokerd-unreachable)"
MAYBE_APPLIED = (
    "brokerd did not answer: the memory write may have been applied all the same; "
    "`bxctl memory log` says whether it was (runbook: brokerd-unreachable)"
)
FAILURE_LABEL = Label(klass="private", untrusted=False)
# brokerd-shim always labels its answers; should one come without, assume the worst of it.
UNLABELLED = Label(klass="private", untrusted=True)

log = logging.getLogger("loopd_shim.broker")


class ToolBroker(Protocol):
    async def call(self, request: ToolRequest) -> ToolResponse:
        """The tool's answer; a failed call is an answer with ok false, never an exception."""
        ...


class BrokerClient:
    """brokerd-shim, over {home}/run/loop-broker/broker.sock or [broker] socket."""

    def __init__(self, socket: Path, timeout: float = BROKER_TIMEOUT):
        self.socket = socket
        self.timeout = timeout

    def _failed(self, request: ToolRequest, output: str) -> ToolResponse:
        return ToolResponse(call_id=request.call_id, ok=False, output=output, label=FAILURE_LABEL)

    async def call(self, request: ToolRequest) -> ToolResponse:
        try:
            reply = await arequest(
                self.socket,
                ToolRequestMessage(request=request),
                timeout=self.timeout,
                reply=ToolResponse,
            )
        except RemoteError as e:
            log.warning(
                "session %s: brokerd refused call %s: %s", request.session, request.call_id, e
            )
            return self._failed(request, f"brokerd refused the call: {e}")
        except UnexpectedReply as e:
            log.warning(
                "session %s: brokerd answered call %s with %s",
                request.session,
                request.call_id,
                e.got,
            )
            return self._failed(request, NO_ANSWER)
        except ProtoError as e:
            log.warning(
                "session %s: brokerd did not answer call %s: %s",
                request.session,
                request.call_id,
                e,
            )
            sent = not isinstance(e, Unreachable)
            return self._failed(request, MAYBE_APPLIED if sent and _writes(request) else NO_ANSWER)
        if reply.call_id != request.call_id:
            log.warning(
                "session %s: brokerd answered call %s as %s",
                request.session,
                request.call_id,
                reply.call_id,
            )
        if reply.label is None:
            log.warning(
                "session %s: brokerd answered call %s without a label",
                request.session,
                request.call_id,
            )
            return reply.model_copy(update={"label": UNLABELLED, "call_id": request.call_id})
        return reply.model_copy(update={"call_id": request.call_id})


def _writes(request: ToolRequest) -> bool:
    """Whether the call may change memory: a memory call (recall and the rest only read)."""
    return request.tool == "memory"
