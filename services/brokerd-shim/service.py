"""The broker: what happens to one tool_request, from decision to answer.

decide (under the grant set as it is now, with the session's state as it is now), append the audit
line that allows the call, run it on the runtime with that state, combine the grant's label with
the runtime's (only ever stricter), make the session's state stricter with the answered label
(durably), append the audit line of its outcome, answer. The ledger is written before the answer
goes out, so a restart cannot forget a result loopd-shim has been given.

Every answer is true to what happened. A call whose allowing line cannot be written is refused
before it is sent anywhere ("the call was not run"). Once it has run (a memory write may be
applied), the outcome line is best effort: if it cannot be written, that is logged and the real
result still goes out, since an error would tell the agent a write failed that memoryd applied.
A result withheld after the call ran (its state cannot be recorded) says that the call ran.
Denials carry the shim's own label, except an argument refusal, which carries its grant's.

Nothing here blocks the event loop. The ledger and the audit log are read and written on one
writer thread, so their writes keep the order of the calls and a slow disk delays only the answers
waiting for it; grants/ is checked (a stat, a reload only when it changed) on its own thread. The
runtime's call to memoryd is the only awaited network step.
"""

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from brokerd_shim.audit import AuditEntry, AuditLog
from brokerd_shim.decide import Decision, decide
from brokerd_shim.errors import LedgerFailed, Stopping
from brokerd_shim.grants import Grant, GrantSet, GrantsWatcher
from brokerd_shim.ledger import Ledger
from brokerd_shim.runtime import Runtime
from proto.labels import Label, stricter
from proto.messages import ToolRequest, ToolRequestMessage, ToolResponse

log = logging.getLogger("brokerd_shim.service")
STOPPING = "brokerd-shim is stopping; the call was not run: try again once it is back"
RAN_BUT_STOPPING = "brokerd-shim is stopping; the call ran, but its result is withheld"
T = TypeVar("T")


class Broker:
    def __init__(self, grants: GrantsWatcher, ledger: Ledger, audit: AuditLog, runtime: Runtime):
        self.grants = grants
        self.ledger = ledger
        self.audit = audit
        self.runtime = runtime
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="brokerd-writer")
        self._grants_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="brokerd-grants")

    async def _on(self, thread: ThreadPoolExecutor, fn: Callable[..., T], *args) -> T:
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(thread, fn, *args)
        except RuntimeError:  # the executor is shut down: close() has run
            raise Stopping(STOPPING) from None
        return await future

    async def current_grants(self) -> GrantSet:
        """The grant set as grants/ holds it now, checked on the grants thread."""
        return await self._on(self._grants_thread, self.grants.current)

    def close(self) -> None:
        """Finish the writes already queued, then stop the threads."""
        self._writer.shutdown(wait=True)
        self._grants_thread.shutdown(wait=True)

    async def handle(self, message: ToolRequestMessage) -> ToolResponse:
        request = message.request
        state, grants = await asyncio.gather(
            self._on(self._writer, self.ledger.state, request.session), self.current_grants()
        )
        decision = decide(grants, request, state)
        grant, spec = decision.grant, decision.spec
        if spec is None or grant is None:  # decide() allows (sets spec) only by a grant
            return await self._on(self._writer, self._refuse, request, decision)
        # AuditFailed here refuses the call before anything ran.
        await self._on(self._writer, self.audit.append, _allowed(request, grant, None, None, None))
        ok, output, runtime_label = await self.runtime.run_labelled(spec)
        label = stricter(grant.label, runtime_label)
        try:
            await self._on(self._writer, self._record_allowed, request, grant, ok, output, label)
        except Stopping:
            raise Stopping(RAN_BUT_STOPPING) from None
        return ToolResponse(call_id=request.call_id, ok=ok, output=output, label=label)

    def _record_allowed(
        self, request: ToolRequest, grant: Grant, ok: bool, output: str, label: Label
    ) -> None:
        """On the writer thread, after the call ran: the session's state, then the outcome's audit
        line (best effort), then the log line."""
        try:
            self.ledger.raise_to(request.session, label)
        except LedgerFailed as e:
            raise LedgerFailed(f"{e} (the call itself ran)") from None
        reason = None if ok else output[:500]
        audited = self.audit.append_outcome(_allowed(request, grant, ok, label, reason))
        log.info(
            "session %s call %r: %r allowed by %s, ok=%s, %s%s%s",
            request.session,
            request.call_id,
            request.tool,
            grant.id,
            ok,
            label.klass,
            ", untrusted" if label.untrusted else "",
            "" if audited else "; its outcome is missing from the audit log",
        )

    def _refuse(self, request: ToolRequest, decision: Decision) -> ToolResponse:
        """On the writer thread: record a call that does not run, and its answer."""
        label = decision.answer_label
        self.ledger.raise_to(request.session, label)
        grant = decision.grant
        self.audit.append(
            AuditEntry(
                session=request.session,
                call_id=request.call_id,
                tool=request.tool[:200],
                grant=grant.id if grant else None,
                grant_sha256=grant.sha256 if grant else None,
                decision=decision.decision,
                ok=False,
                label=decision.label,
                reason=decision.reason,
            )
        )
        log.info(
            "session %s call %r: %r %s: %s",
            request.session,
            request.call_id,
            request.tool[:64],
            decision.decision,
            decision.reason,
        )
        # decide() gives every deny and ask its reason.
        output = decision.reason or ""
        return ToolResponse(call_id=request.call_id, ok=False, output=output, label=label)


def _allowed(
    request: ToolRequest, grant: Grant, ok: bool | None, label: Label | None, reason: str | None
) -> AuditEntry:
    """The audit line of an allowed call: before it runs (ok and label None), or its outcome."""
    return AuditEntry(
        session=request.session,
        call_id=request.call_id,
        tool=request.tool,
        grant=grant.id,
        grant_sha256=grant.sha256,
        decision="allow",
        ok=ok,
        label=label,
        reason=reason,
    )
