"""decide(): one tool call, the grant set and the session's state -> a Decision. Pure.

In order: an invalid grant set denies everything (grants-invalid); a tool no grant names is denied;
arguments are parsed (recall and memory with proto's models and spec 5's limits, any other tool
must send a JSON object) and a refusal is answered with the grant's label; the owner's grants are
tried in id order until one's constraints cover the call; then the grant's mode (deny, or ask,
which this shim cannot put to the owner) and max_taint (a session holding a higher class than
max_taint is denied). What remains is allowed, with the RunSpec the runtime gets.
"""

from dataclasses import dataclass

from pydantic import BaseModel

from brokerd_shim.builtin import MEMORY_TOOLS
from brokerd_shim.constraints import why_not_covered
from brokerd_shim.grants import Grant, GrantSet
from brokerd_shim.ledger import SessionState
from brokerd_shim.runtime import RunSpec
from proto.errors import InvalidArguments
from proto.labels import CLASS_RANK, Label
from proto.messages import ToolRequest
from proto.tools import parse_json_object, parse_tool

SHIM_LABEL = Label(klass="private", untrusted=False)


SHOWN_PROBLEMS = 5


def grants_invalid_text(problems: tuple[str, ...]) -> str:
    shown = "; ".join(problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    if more > 0:
        shown += f"; and {more} more"
    return f"grants/ is invalid, so every call is denied (runbook: grants-invalid): {shown}"


def no_grant_text(tool: str) -> str:
    return f"no grant allows {tool[:64]}"


def ask_text(tool: str, grant_id: str) -> str:
    return (
        f"{tool[:64]} needs the owner's approval under grant {grant_id}, "
        "which brokerd-shim cannot ask for; the call is denied"
    )


@dataclass(frozen=True)
class Decision:
    """allow (spec set), deny or ask. label: what the answer carries if nothing runs."""

    decision: str
    grant: Grant | None
    reason: str | None = None
    spec: RunSpec | None = None
    label: Label | None = None

    @property
    def answer_label(self) -> Label:
        return self.label or SHIM_LABEL


def _deny(reason: str, grant: Grant | None = None, label: Label | None = None) -> Decision:
    return Decision("deny", grant, reason=reason, label=label)


def decide(grants: GrantSet, request: ToolRequest, state: SessionState) -> Decision:
    if not grants.valid:
        return _deny(grants_invalid_text(grants.problems))
    candidates = grants.candidates(request.tool)
    if not candidates:
        return _deny(no_grant_text(request.tool))
    arguments: BaseModel | dict
    try:
        if request.tool in MEMORY_TOOLS:
            arguments = parse_tool(request.tool, request.arguments)
        else:
            arguments = parse_json_object(request.arguments)
    except InvalidArguments as e:
        return _deny(str(e), candidates[0], candidates[0].label)
    grant, why = None, None
    for candidate in candidates:
        constraints = candidate.constraints
        # Grants for recall and memory carry no constraints (grants.py refuses them).
        if constraints.empty or not isinstance(arguments, dict):
            why = None
        else:
            why = why_not_covered(constraints, arguments)
        if why is None:
            grant = candidate
            break
    if grant is None:
        return _deny(f"{no_grant_text(request.tool)} for this call: {why}")
    if grant.mode == "deny":
        return _deny(f"grant {grant.id} denies {request.tool}", grant)
    if grant.mode == "ask":
        return Decision("ask", grant, reason=ask_text(request.tool, grant.id))
    if CLASS_RANK[state.klass] > CLASS_RANK[grant.max_taint]:
        return _deny(
            f"this session holds {state.klass} data, above what grant {grant.id} allows "
            f"for {request.tool} ({grant.max_taint})",
            grant,
        )
    return Decision("allow", grant, spec=RunSpec(request, arguments, state))
