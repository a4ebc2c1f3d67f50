"""What memory-mcp offers and what it lets through, decided without I/O.

The two tools carry proto's schemas (spec 5) as their input schemas, unchanged. A call is checked
with proto's parsers, the ones brokerd-shim uses, before anything is sent: so memoryd never gets
from memory-mcp a call brokerd would refuse, and a refusal carries the same sentence brokerd's
would. The arguments travel to memoryd as the JSON text a model would have written, and must fit
in one frame with the rest of the memory_call.
"""

import json
from dataclasses import dataclass

from proto.errors import FrameTooLarge, InvalidArguments
from proto.frames import MAX_FRAME, encode_frame
from proto.labels import DataClass, Label
from proto.messages import MemoryCall, ToolRequest, body_of, kind_of
from proto.tools import MEMORY_SCHEMA, RECALL_SCHEMA, parse_tool

TOOLS: dict[str, tuple[str, dict]] = {
    "recall": (
        "Search the owner's notes and past sessions. Each hit starts with its source: identity, "
        "memory, or memory-tainted (from a session that had read untrusted content).",
        RECALL_SCHEMA,
    ),
    "memory": (
        'Edit memory.md or user.md (file "memory" or "user"): add text, replace or remove an old '
        "entry named by its exact text, or consolidate every entry (keep, text, move to notes, "
        "drop). note records something seen or told. Takes effect in the next session.",
        MEMORY_SCHEMA,
    ),
}

# brokerd's built-in grants label a memory tool's answer private and trusted; memoryd's label can
# only make it stricter (spec 8).
GRANT_LABEL = Label(klass="private", untrusted=False)


def too_large_text(tool: str) -> str:
    return f"{tool}: the arguments do not fit in one message to memoryd ({MAX_FRAME:,} bytes)"


@dataclass(frozen=True)
class Refused:
    """The call goes nowhere; text is what the client's model reads."""

    text: str


def prepare(
    tool: str,
    arguments: dict | None,
    session: str,
    call_id: str,
    taint: DataClass,
    untrusted: bool,
) -> MemoryCall | Refused:
    """The memory_call to send for one tools/call, or the sentence refusing it."""
    try:
        text = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return Refused(f"{tool[:64]}: arguments must be a JSON object")
    try:
        parse_tool(tool, text)
    except InvalidArguments as e:
        return Refused(str(e))
    call = MemoryCall(
        request=ToolRequest(session=session, call_id=call_id, tool=tool, arguments=text),
        taint=taint,
        untrusted=untrusted,
    )
    try:
        encode_frame(kind_of(call), body_of(call))
    except FrameTooLarge:
        return Refused(too_large_text(tool))
    return call
