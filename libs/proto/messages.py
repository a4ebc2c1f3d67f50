"""Message kinds and their bodies.

Each kind is a pydantic model with unknown keys refused and no type coercion (a wire peer gets
exactly the types it sent checked). parse_body turns (kind, body) into its model and refuses
unknown kinds; body_of turns a model back into a wire body.

A refusal is bounded whatever the body holds: unknown keys are found by one pass over the body
before pydantic runs (so 90,000 of them cost a set difference, not 90,000 error objects), lists of
models stop at their first bad item, and the text names the first PROBLEMS_SHOWN problems and
the count of the others.
"""

import functools
import re
import types
import typing
from typing import Annotated, Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from proto.errors import InvalidMessage
from proto.labels import DataClass, Label
from proto.plural import counted
from proto.version import package_version

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"
# An edit of memoryd's journal (YYYY-MM-DD-NNNN: the day, then its number of 4 to 9 digits, as
# memoryd hands them out and reads them) and a pending write (p-YYYY-MM-DD-NNNN), as the owner's
# commands take them.
EDIT_ID_PATTERN = r"^([0-9]{4}-[0-9]{2}-[0-9]{2})-([0-9]{4,9})\Z"
PENDING_ID_PATTERN = r"^p-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4,9}\Z"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")

SessionId = Annotated[str, StringConstraints(pattern=SESSION_ID_PATTERN)]
CallId = Annotated[str, StringConstraints(min_length=1, max_length=200)]


def is_session_id(value: object) -> TypeGuard[str]:
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
    """The spec's body exactly: a client that holds the spec's schema, extra fields forbidden,
    reads it. What the new index left out is in stats' index state (reindexed_line)."""

    logs: Annotated[int, Field(ge=0)]
    records: Annotated[int, Field(ge=0)]
    notes: Annotated[int, Field(ge=0)]


def reindexed_line(reply: Reindexed, left_aside: int = 0, not_indexed: int = 0) -> str:
    """The answer as bxctl prints it and memoryd logs it: the spec's sentence, then the session
    logs the new index left aside (a link, a FIFO, a damaged record) and those it could not read
    (tried again), since an owner runs reindex to mend the index."""
    said = (
        f"reindexed: {counted(reply.logs, 'log')}, {counted(reply.records, 'record')}, "
        f"{counted(reply.notes, 'note')}"
    )
    if left_aside:
        said += f"; {counted(left_aside, 'session log')} left aside, wholly or from a damaged"
        said += " record"
    if not_indexed:
        said += f"; {counted(not_indexed, 'session log')} not indexed (tried again)"
    if left_aside or not_indexed:
        said += " (bxctl memory stats names them and why)"
    return said


ADMIN_COMMANDS = (
    "log",
    "undo",
    "pending",
    "accept",
    "reject",
    # bxctl's owner commands beyond the spec; arg is JSON for these
    "show",
    "block",
    "search",
    "stats",
    "promote",
    "file",
    "edit",
    # the owner's data: backup, restore, export, import, forget
    "backup",
    "restore",
    "export",
    "import",
    "forget",
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
    tool_calls: Annotated[list[ToolCall], Field(fail_fast=True)] = []


class ToolResultOut(Body):
    call_id: CallId
    name: str
    ok: bool
    output: str
    label: Label


class AssistantResults(Body):
    results: Annotated[list[ToolResultOut], Field(fail_fast=True)]


# The body `scripts/stack status` and the containers' health checks send with a kind each socket
# serves (proto.health): every socket refuses it, so answering it touches nothing, and the server
# says nothing of it at INFO, as it would of another refused request.
HEALTH_PROBE = {"health_check_by_scripts_stack": 1}


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


PROBLEMS_SHOWN = 5
WHERE_LIMIT = 64


def bounded(problems: list[str], total: int) -> str:
    text = "; ".join(problems[:PROBLEMS_SHOWN])
    if total > PROBLEMS_SHOWN:
        text += f"; and {total - PROBLEMS_SHOWN} more problems"
    return text


def describe(error: ValidationError) -> str:
    """One bounded line naming the first few fields that failed and why, and the count.

    However many problems there are, the first few are named: a count alone tells the sender
    nothing to mend. Reading the errors costs about a microsecond each, and what reaches pydantic
    is bounded first (unknown keys counted by one pass, lists of models failing fast, a tool's
    arguments by their length), so the list stays short where a peer sends it.
    """
    total = error.error_count()
    parts = []
    errors = error.errors(include_url=False, include_context=False, include_input=False)
    for item in errors[:PROBLEMS_SHOWN]:
        where = ".".join(str(p)[:WHERE_LIMIT] for p in item["loc"]) or "body"
        parts.append(f"{where}: {item['msg']}")
    return bounded(parts, total)


def _models_in(annotation: object) -> tuple[type[BaseModel] | None, bool]:
    """(the model a field holds, whether it holds a list of them), or (None, False)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin is list:
        model, _ = _models_in(typing.get_args(annotation)[0])
        return model, model is not None
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            model, many = _models_in(arg)
            if model is not None:
                return model, many
        return None, False
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


@functools.cache
def _shape(model: type[BaseModel]) -> tuple[frozenset[str], tuple]:
    """The keys a model knows, and (wire key, model, is a list) for each field holding models."""
    keys: set[str] = set()
    inner = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        keys.update((name, key))
        held, many = _models_in(field.annotation)
        if held is not None:
            inner.append((key, held, many))
    return frozenset(keys), tuple(inner)


def unknown_keys(model: type[BaseModel], body: dict, where: str = "") -> tuple[list[str], int]:
    """The first few unknown keys of body and of the models inside it, and how many in all."""
    known, inner = _shape(model)
    named: list[str] = []
    total = 0
    if not body.keys() <= known:
        for key in body:
            if key not in known:
                total += 1
                if len(named) < PROBLEMS_SHOWN:
                    named.append(f"{where}{str(key)[:WHERE_LIMIT]}")
    for key, held, many in inner:
        value = body.get(key)
        items = enumerate(value) if many and isinstance(value, list) else [(None, value)]
        for index, item in items:
            if not isinstance(item, dict):
                continue
            at = f"{where}{key}." if index is None else f"{where}{key}.{index}."
            more, count = unknown_keys(held, item, at)
            named.extend(more[: PROBLEMS_SHOWN - len(named)])
            total += count
    return named, total


def parse_body(kind: str, body: dict) -> Body:
    """The model of a (kind, body) pair; InvalidMessage for an unknown kind or a bad body."""
    model = KINDS.get(kind)
    if model is None:
        raise InvalidMessage(f"unknown message kind {kind[:64]!r}")
    command = body.get("command") if kind == "memory_admin" else None
    if isinstance(command, str) and command not in ADMIN_COMMANDS:
        # A newer bxctl's command reaching an older memoryd: say which, not the list of all.
        raise InvalidMessage(
            f"unknown owner command {command[:32]!r} (memoryd {package_version()} does not know"
            " it: if bxctl was upgraded, restart memoryd with the same version: scripts/stack up)"
        )
    named, total = unknown_keys(model, body)
    if total:
        problems = [f"{where}: unknown key" for where in named]
        raise InvalidMessage(f"invalid {kind} body: {bounded(problems, total)}")
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise InvalidMessage(f"invalid {kind} body: {describe(e)}") from None


def body_of(message: Body) -> dict:
    """The wire body of a model."""
    return message.model_dump(by_alias=True, mode="python")


def kind_of(message: Body) -> str:
    return KIND_OF[type(message)]
