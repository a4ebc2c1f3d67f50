"""Message kinds and their bodies.

Each kind is a pydantic model with unknown keys refused and no type coercion (a wire peer gets
exactly the types it sent checked). parse_body turns (kind, body) into its model and refuses
unknown kinds; body_of turns a model back into a wire body.
"""

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from proto.errors import InvalidMessage
from proto.labels import DataClass, Label

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")

SessionId = Annotated[str, StringConstraints(pattern=SESSION_ID_PATTERN)]
CallId = Annotated[str, StringConstraints(min_length=1, max_length=200)]


def is_session_id(value: object) -> bool:
    """True when value may name a session (and so a folder)."""
    return isinstance(value, str) and _SESSION_ID.fullmatch(value) is not None


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class Empty(Body):
    pass


class Text(Body):
    text: str


class ToolRequest(Body):
    session: SessionId
    call_id: CallId
    tool: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    arguments: str


class ToolCall(Body):
    id: CallId
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    arguments: str


# --- memoryd (spec 7) ---------------------------------------------------------------------------
class MemoryBlock(Empty):
    pass


class MemoryBlockReply(Text):
    pass


class SessionUpdated(Body):
    session: SessionId


class Ok(Empty):
    pass


class MemoryCall(Body):
    request: ToolRequest
    taint: DataClass
    untrusted: bool


class ToolResponse(Body):
    call_id: CallId
    ok: bool
    output: str
    label: Label | None


class Reindex(Empty):
    pass


class Reindexed(Body):
    logs: Annotated[int, Field(ge=0)]
    records: Annotated[int, Field(ge=0)]
    notes: Annotated[int, Field(ge=0)]


ADMIN_COMMANDS = (
    "log",
    "undo",
    "pending",
    "accept",
    "reject",
    # bxctl's owner commands beyond the spec (design section 8, issue 17); arg is JSON for these
    "show",
    "block",
    "search",
    "stats",
    "promote",
    "file",
    "edit",
)
ADMIN_ARG_MAX = 262_144  # edit carries a whole file (65,536 characters, JSON-escaped)


class MemoryAdmin(Body):
    command: Literal[ADMIN_COMMANDS]  # type: ignore[valid-type]
    arg: Annotated[str, StringConstraints(max_length=ADMIN_ARG_MAX)]


class MemoryAdminReply(Text):
    pass


class Error(Text):
    pass


# --- brokerd (loopd to brokerd) -----------------------------------------------------------------
class ToolRequestMessage(Body):
    request: ToolRequest


# --- loopd-shim's control socket (whoever plays the model) --------------------------------------
class SessionStart(Body):
    session: SessionId | None = None


class SessionStarted(Body):
    session: SessionId
    system: str
    tools: list[dict]


class OwnerMessage(Body):
    session: SessionId
    content: Annotated[str, StringConstraints(min_length=1)]


class AssistantMessage(Body):
    session: SessionId
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] = []


class ToolResultOut(Body):
    call_id: CallId
    name: str
    ok: bool
    output: str
    label: Label


class AssistantResults(Body):
    results: list[ToolResultOut]


KINDS: dict[str, type[Body]] = {
    "memory_block": MemoryBlock,
    "memory_block_reply": MemoryBlockReply,
    "session_updated": SessionUpdated,
    "ok": Ok,
    "memory_call": MemoryCall,
    "tool_response": ToolResponse,
    "reindex": Reindex,
    "reindexed": Reindexed,
    "memory_admin": MemoryAdmin,
    "memory_admin_reply": MemoryAdminReply,
    "tool_request": ToolRequestMessage,
    "error": Error,
    "session_start": SessionStart,
    "session_started": SessionStarted,
    "owner_message": OwnerMessage,
    "assistant_message": AssistantMessage,
    "assistant_results": AssistantResults,
}

KIND_OF: dict[type[Body], str] = {model: kind for kind, model in KINDS.items()}


def describe(error: ValidationError) -> str:
    """One line naming each field that failed and why."""
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p)[:64] for p in item["loc"]) or "body"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def parse_body(kind: str, body: dict) -> Body:
    """The model of a (kind, body) pair; InvalidMessage for an unknown kind or a bad body."""
    model = KINDS.get(kind)
    if model is None:
        raise InvalidMessage(f"unknown message kind {kind[:64]!r}")
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise InvalidMessage(f"invalid {kind} body: {describe(e)}") from None


def body_of(message: Body) -> dict:
    """The wire body of a model."""
    return message.model_dump(by_alias=True, mode="python")


def kind_of(message: Body) -> str:
    return KIND_OF[type(message)]
