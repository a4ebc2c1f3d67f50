"""The memory runtime: recall and memory calls go to memoryd as memory_call (spec 8).

The memory_call carries the session's class (taint) and untrusted flag as they were when the call
was decided, not after. memoryd answers with a tool_response whose label may be null (the grant's
label then stands alone) or a label the caller combines with the grant's. When memoryd does not
answer within the timeout (30 seconds unless configured), or cannot be reached at all, the call
fails with MEMORYD_UNREACHABLE, a fixed sentence pointing at the runbook entry.

Except a `memory` write whose frame went out and got no answer (the timeout, or memoryd closing
the connection): memoryd applies a write it has begun, and answers only once it is journalled, so
such a write may have been applied. Its answer says so and where to look (WRITE_UNKNOWN), never
that it failed: a model told so would write the note again, or tell the owner it could not
remember what it did. It is still ok false, since it is not known to stand. A recall that got no
answer changed nothing, and fails as above.
"""

import logging
from pathlib import Path

from brokerd_shim.runtime import RunSpec, Runtime
from proto.client import RemoteError, arequest
from proto.errors import ProtoError, UnexpectedReply, Unreachable
from proto.labels import Label
from proto.messages import MemoryCall, ToolResponse

log = logging.getLogger("brokerd_shim.memory")

MEMORYD_UNREACHABLE = (
    "memoryd did not answer; memory calls fail until it is back (runbook: memoryd-unreachable)"
)
WRITE_UNKNOWN = (
    "memoryd did not answer after the memory write was sent: it may have been applied all the "
    "same; the owner can see whether it was with `bxctl memory log` before it is tried again "
    "(runbook: memoryd-unreachable)"
)
MEMORYD_WRONG_REPLY = (
    "memoryd answered with something other than a tool_response (runbook: memoryd-unreachable)"
)


class MemoryRuntime(Runtime):
    def __init__(self, socket: Path, timeout: float = 30.0):
        self.socket = socket
        self.timeout = timeout

    async def run_labelled(self, spec: RunSpec) -> tuple[bool, str, Label | None]:
        call = MemoryCall(
            request=spec.request, taint=spec.state.klass, untrusted=spec.state.untrusted
        )
        session, call_id = spec.request.session, spec.request.call_id
        try:
            reply = await arequest(self.socket, call, timeout=self.timeout, reply=ToolResponse)
        except RemoteError as e:
            log.warning("memory: session %s call %r: memoryd refused: %s", session, call_id, e)
            return False, f"memoryd refused the call: {e}", None
        except UnexpectedReply as e:
            log.warning("memory: session %s call %r: memoryd answered %s", session, call_id, e.got)
            return False, MEMORYD_WRONG_REPLY, None
        except Unreachable as e:  # nothing was sent
            log.warning("memory: session %s call %r: %s", session, call_id, e)
            return False, MEMORYD_UNREACHABLE, None
        except ProtoError as e:
            if spec.request.tool != "memory":  # a recall changes nothing: it failed
                log.warning("memory: session %s call %r: %s", session, call_id, e)
                return False, MEMORYD_UNREACHABLE, None
            log.warning(
                "memory: session %s call %r: %s; the write was sent and may have been applied",
                session,
                call_id,
                e,
            )
            return False, WRITE_UNKNOWN, None
        return reply.ok, reply.output, reply.label
