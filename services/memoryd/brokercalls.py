"""memoryd's answers to brokerd: a session's recall and memory calls (service.py wires them).

A recall runs on a reader (one of many common words in the heavy lane: recall/heaviness.py), from
the index as it is when notes.md changed and the writer is too busy to catch it up at once
(recall/notesbehind.py); a memory call is witnessed first (its session's log read to its end, on
the session's own thread, so that the caller is judged by what the log shows, not by what brokerd
says) and then applied on the writer. Either is not run when its caller stopped waiting before
it began: the caller was told the call failed, and applying it then would make that answer a lie.
A memory call the writer has not started within write_deadline seconds is answered not applied,
and nothing is written. One applied is answered as soon as it is journalled: the index catches
up with notes.md after the answer (notesafter.py).
"""

import asyncio
import logging
import time
from collections.abc import Awaitable
from functools import partial

from memoryd.data.lay import Unfinished
from memoryd.errors import EditRefused, MemorydError
from memoryd.recall import heaviness
from memoryd.recall.recaller import RecallResult
from memoryd.trust.caller import Caller
from memoryd.trust.witness import NoVerdict
from memoryd.writer import NotStarted
from proto import peer
from proto.errors import InvalidArguments
from proto.messages import Body, MemoryCall, ToolResponse
from proto.tools import MemoryArgs, parse_memory, parse_recall

log = logging.getLogger("memoryd")

NOT_APPLIED = (
    "memoryd was too busy to start this memory call in time; it was not applied and nothing was"
    " written. Try again."
)
GONE = "the caller stopped waiting before this call began; it was not run."


class CallerGone(Exception):
    """Raised just before a memory call is applied (on the writer) or a queued recall is run (on
    a reader) when its caller has closed the connection: it stopped waiting, and was told the
    call failed, so the call is not run."""


class BrokerCalls:
    """The brokerd socket's one message kind, memory_call, for the service that serves it."""

    def __init__(self, service):
        self.service = service

    async def answer(self, message: Body) -> Body:
        if not isinstance(message, MemoryCall):
            raise MemorydError(f"{type(message).__name__} is not served on the brokerd socket")
        request = message.request
        try:
            if request.tool == "recall":
                recall_args = parse_recall(request.arguments)
                gone = peer.current()

                def recall(behind: bool, weighed: bool) -> RecallResult:
                    # Queued behind slow recalls until its caller gave up: nobody reads it now,
                    # and running it would only make the recalls queued after it wait longer.
                    if gone is not None and gone():
                        raise CallerGone
                    if weighed:  # a heavy one runs in the heavy lane instead (service.in_lanes)
                        heaviness.check(self.service.index, recall_args.query, recall_args.k)
                    return self.service.recaller.recall(
                        recall_args.query, recall_args.k, session=request.session, behind=behind
                    )

                def in_lane(weighed: bool) -> Awaitable[RecallResult]:
                    return self.service.recall_notes.read(partial(recall, weighed=weighed))

                try:
                    result = await self.service.in_lanes(
                        in_lane, f"session {request.session}: recall {request.call_id}"
                    )
                except CallerGone:
                    log.info(
                        "session %s: recall %s not run: its caller stopped waiting",
                        request.session,
                        request.call_id,
                    )
                    return ToolResponse(call_id=request.call_id, ok=False, output=GONE, label=None)
                return ToolResponse(
                    call_id=request.call_id, ok=True, output=result.text, label=result.label
                )
            if request.tool == "memory":
                args = parse_memory(request.arguments)
                deadline = self.service._deadline()
                try:
                    caller = await self._witnessed(message, deadline)
                    gone = peer.current()
                    output = await self.service._write(
                        self._apply, args, caller, gone, deadline=deadline
                    )
                    self.service._catching.nudge()
                except CallerGone:
                    log.warning(
                        "session %s: memory call %s not applied: its caller stopped waiting for "
                        "the answer before the write began (it was told the call failed)",
                        request.session,
                        request.call_id,
                    )
                    return ToolResponse(call_id=request.call_id, ok=False, output=GONE, label=None)
                except NotStarted:
                    log.warning(
                        "session %s: memory call %s not applied: not started within %g s",
                        request.session,
                        request.call_id,
                        self.service.write_deadline,
                    )
                    return ToolResponse(
                        call_id=request.call_id, ok=False, output=NOT_APPLIED, label=None
                    )
                return ToolResponse(call_id=request.call_id, ok=True, output=output, label=None)
        except (InvalidArguments, EditRefused, Unfinished) as e:
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

    async def _witnessed(self, message: MemoryCall, deadline: float) -> Caller:
        """The caller, made stricter by what its session's log shows, read to its end after the
        call arrived (witness.py) on the session's own thread, and by what memoryd recorded of
        the session (trust/monotone.py: its label never gets laxer because brokerd's did).
        NotStarted when the read outlasts the call's deadline (it goes on for the session's next
        call) or memoryd stops."""
        caller = Caller.of(message)
        if self.service.witness is None or caller.session is None or caller.taint is None:
            return caller
        reported = (caller.taint, caller.untrusted)
        asked = asyncio.wrap_future(self.service.witness.ask(caller.session, reported))
        try:
            verdict = await asyncio.wait_for(asked, deadline - time.monotonic())
        except (TimeoutError, NoVerdict):
            raise NotStarted from None
        taint, untrusted = self.service.witness.apply(
            caller.session, verdict, caller.taint, caller.untrusted
        )
        return caller.stricter(taint, untrusted)

    def _apply(self, args: MemoryArgs, caller: Caller, gone: peer.Probe | None = None) -> str:
        # A caller that gave up told its model the call failed: applied now, that would be a lie.
        if gone is not None and gone():
            raise CallerGone
        service = self.service
        before = service.index.notes_file()  # what the write starts from is memoryd's own change
        output = service.store.call(args, caller)
        service._notes_after(before)  # answered now; notes.md is caught up after (notesafter.py)
        return output
