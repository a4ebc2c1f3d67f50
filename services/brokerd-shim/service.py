"""The broker: what happens to one tool_request, from decision to answer.

decide (under the grant set as it is now, with the session's state as it is now), run the allowed
call on the runtime with that state, combine the grant's label with the runtime's (only ever
stricter), make the session's state stricter with the answered label (durably), append the audit
line, answer. The ledger and the audit log are written before the answer goes out, so a restart
cannot forget a result loopd-shim has been given. Denials carry the shim's own label, except an
argument refusal, which carries its grant's.
"""

import logging

from brokerd_shim.audit import AuditEntry, AuditLog
from brokerd_shim.decide import Decision, decide
from brokerd_shim.grants import GrantsWatcher
from brokerd_shim.ledger import Ledger
from brokerd_shim.runtime import Runtime
from proto.labels import stricter
from proto.messages import ToolRequest, ToolRequestMessage, ToolResponse

log = logging.getLogger("brokerd_shim.service")


class Broker:
    def __init__(self, grants: GrantsWatcher, ledger: Ledger, audit: AuditLog, runtime: Runtime):
        self.grants = grants
        self.ledger = ledger
        self.audit = audit
        self.runtime = runtime

    async def handle(self, message: ToolRequestMessage) -> ToolResponse:
        request = message.request
        state = self.ledger.state(request.session)
        decision = decide(self.grants.current(), request, state)
        if decision.spec is None:
            return self._refuse(request, decision)
        grant = decision.grant
        ok, output, runtime_label = await self.runtime.run_labelled(decision.spec)
        label = stricter(grant.label, runtime_label)
        self.ledger.raise_to(request.session, label)
        self.audit.append(
            AuditEntry(
                session=request.session,
                call_id=request.call_id,
                tool=request.tool,
                grant=grant.id,
                grant_sha256=grant.sha256,
                decision="allow",
                ok=ok,
                label=label,
                reason=None if ok else output[:500],
            )
        )
        log.info(
            "session %s call %r: %r allowed by %s, ok=%s, %s%s",
            request.session,
            request.call_id,
            request.tool,
            grant.id,
            ok,
            label.klass,
            ", untrusted" if label.untrusted else "",
        )
        return ToolResponse(call_id=request.call_id, ok=ok, output=output, label=label)

    def _refuse(self, request: ToolRequest, decision: Decision) -> ToolResponse:
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
        return ToolResponse(call_id=request.call_id, ok=False, output=decision.reason, label=label)
