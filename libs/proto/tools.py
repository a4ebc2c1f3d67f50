"""The arguments of the two memory tools, recall and memory (spec 5), with their shapes and limits.

The model writes arguments as JSON text. parse_recall and parse_memory turn that text into a model
or raise InvalidArguments naming what is wrong. Shapes are checked here; what depends on the
files (limits, duplicates, whether an old entry exists) is memoryd's to check.

What a parse may cost is bounded before it starts, since json.loads and pydantic hold the GIL and
run on the event loops of memoryd and brokerd-shim: arguments longer than any valid call of the
tool (ARGUMENTS_MAX), a consolidate with more entries than a file can hold (ENTRIES_MAX), and
unknown keys (found by one pass, not one pydantic error each) are refused in one line.
"""

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from proto.errors import InvalidArguments
from proto.messages import bounded, describe, unknown_keys
from proto.surrogates import may_hold, not_text
from proto.trim import trim

QUERY_MAX = 500
K_MIN, K_MAX, K_DEFAULT = 1, 10, 5
NOTE_MAX = 1_000
# memory.md's limit, the larger file's (memoryd's entries.LIMITS), and the separator between two
# entries ("\n§\n"): a file within it holds at most 550 entries of one character, so a
# consolidate names at most 550 and adds at most 550.
FILE_CHARS_MAX = 2_200
SEPARATOR_CHARS = 3
ENTRIES_MAX = 2 * ((FILE_CHARS_MAX + SEPARATOR_CHARS) // (1 + SEPARATOR_CHARS))
# The longest valid call of each tool, with room: a recall's query of QUERY_MAX characters, or a
# consolidate of a whole memory.md and its rewrite, even with every character escaped as JSON
# writes one outside the BMP (\ud83d\ude00, 12 characters) and ENTRIES_MAX entries' keys
# (under 90,000 characters), as memoryd's json.dumps writes a pending call again.
ARGUMENTS_MAX = {"recall": 8_192, "memory": 131_072}

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
MemoryFile = Literal["memory", "user"]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RecallArgs(Args):
    query: Annotated[str, StringConstraints(min_length=1, max_length=QUERY_MAX)]
    k: Annotated[int, Field(ge=K_MIN, le=K_MAX)] = K_DEFAULT


class AddArgs(Args):
    action: Literal["add"]
    file: MemoryFile
    text: NonEmpty


class ReplaceArgs(Args):
    action: Literal["replace"]
    file: MemoryFile
    old: NonEmpty
    text: NonEmpty


class RemoveArgs(Args):
    action: Literal["remove"]
    file: MemoryFile
    old: NonEmpty


def note_length_problem(text: str) -> str | None:
    """The note rule (spec 5: 1 to NOTE_MAX characters), counted on the note as it is stored,
    trimmed: the parse (brokerd-shim, memoryd) and memoryd's applying give one count and one
    sentence, so a note sent with a final newline is not refused for the newline it loses."""
    length = len(trim(text))
    if 1 <= length <= NOTE_MAX:
        return None
    return f"a note is 1 to {NOTE_MAX:,} characters; this one is {length:,}"


def _note_text(text: str) -> str:
    problem = note_length_problem(text)
    if problem is not None:
        raise PydanticCustomError("note_length", problem)
    return text


class NoteArgs(Args):
    action: Literal["note"]
    text: Annotated[str, AfterValidator(_note_text)]


class ConsolidateEntry(Args):
    """One line of a consolidate: an old entry with exactly one of keep, text, move, drop, or a
    new entry given by text alone."""

    old: NonEmpty | None = None
    keep: Literal[True] | None = None
    text: NonEmpty | None = None
    move: Literal[True] | None = None
    drop: Literal[True] | None = None

    def model_post_init(self, _context: object) -> None:
        chosen = [n for n in ("keep", "text", "move", "drop") if getattr(self, n) is not None]
        if self.old is None:
            if chosen != ["text"]:
                raise ValueError("an entry without old must be a new entry: text alone")
        elif len(chosen) != 1:
            raise ValueError("an entry with old needs exactly one of keep, text, move, drop")

    @property
    def choice(self) -> str:
        """keep, rewrite, move, drop, or new."""
        if self.old is None:
            return "new"
        if self.keep:
            return "keep"
        if self.move:
            return "move"
        if self.drop:
            return "drop"
        return "rewrite"


class ConsolidateArgs(Args):
    action: Literal["consolidate"]
    file: MemoryFile
    entries: Annotated[list[ConsolidateEntry], Field(min_length=1)]


MemoryArgs = Annotated[
    AddArgs | ReplaceArgs | RemoveArgs | NoteArgs | ConsolidateArgs,
    Field(discriminator="action"),
]
_MEMORY = TypeAdapter(MemoryArgs)

RECALL_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": QUERY_MAX},
        "k": {"type": "integer", "minimum": K_MIN, "maximum": K_MAX, "default": K_DEFAULT},
    },
    "required": ["query"],
    "additionalProperties": False,
}

_ENTRY_SCHEMA = {
    "type": "object",
    "properties": {
        "old": {"type": "string"},
        "keep": {"const": True},
        "text": {"type": "string"},
        "move": {"const": True},
        "drop": {"const": True},
    },
    "additionalProperties": False,
}

MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "replace", "remove", "note", "consolidate"]},
        "file": {"enum": ["memory", "user"]},
        "text": {"type": "string"},
        "old": {"type": "string"},
        "entries": {"type": "array", "items": _ENTRY_SCHEMA},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def parse_json_object(
    arguments: str, tool: str | None = None, *, blank_is_empty: bool = False
) -> dict:
    """The JSON object a model wrote as a tool's arguments, for every tool of every role.

    InvalidArguments, its text starting "{tool}: " when tool is given, when the text is not JSON,
    not an object, or holds a string or key that is not text (half of a surrogate pair, which JSON
    can spell and UTF-8 cannot write). blank_is_empty: text of only white space counts as {}
    (loopd's local tools).
    """
    prefix = f"{tool}: " if tool is not None else ""
    if not isinstance(arguments, str):
        raise InvalidArguments(f"{prefix}arguments must be JSON text")
    if blank_is_empty and not arguments.strip():
        return {}
    try:
        data = json.loads(arguments)
    except (ValueError, RecursionError):
        raise InvalidArguments(f"{prefix}arguments are not valid JSON") from None
    if not isinstance(data, dict):
        raise InvalidArguments(f"{prefix}arguments must be a JSON object")
    # A lone surrogate passes json.loads and pydantic's plain str, then fails whatever writes it
    # (a note, an audit line): refused here, for every field and key of every tool.
    if may_hold(arguments):
        problem = not_text(data)
        if problem is not None:
            raise InvalidArguments(f"{prefix}{problem}")
    return data


def _check_length(tool: str, arguments: str) -> None:
    limit = ARGUMENTS_MAX[tool]
    if isinstance(arguments, str) and len(arguments) > limit:
        raise InvalidArguments(
            f"{tool}: arguments of {len(arguments):,} characters are over the limit of "
            f"{limit:,}; no valid {tool} call is as long"
        )


def _refuse_unknown_keys(tool: str, model: type[BaseModel], data: dict, where: str = "") -> None:
    """where: the action a memory call's keys are named under, as pydantic names a union's."""
    named, total = unknown_keys(model, data, where)
    if total:
        raise InvalidArguments(f"{tool}: {bounded([f'{k}: unknown key' for k in named], total)}")


def _parse(tool: str, arguments: str, validate: Callable[[dict], BaseModel]):
    _check_length(tool, arguments)
    data = parse_json_object(arguments, tool)
    try:
        return validate(data)
    except ValidationError as e:
        raise InvalidArguments(f"{tool}: {describe(e)}") from None


def _validate_recall(data: dict) -> RecallArgs:
    _refuse_unknown_keys("recall", RecallArgs, data)
    return RecallArgs.model_validate(data)


def parse_recall(arguments: str) -> RecallArgs:
    return _parse("recall", arguments, _validate_recall)


MEMORY_ACTIONS = tuple(MEMORY_SCHEMA["properties"]["action"]["enum"])
_MEMORY_MODELS: dict[str, type[BaseModel]] = {
    "add": AddArgs,
    "replace": ReplaceArgs,
    "remove": RemoveArgs,
    "note": NoteArgs,
    "consolidate": ConsolidateArgs,
}


def _validate_memory(data: dict):
    action = data.get("action")
    if action not in MEMORY_ACTIONS:
        got = "no action" if action is None else "an unknown action"
        raise InvalidArguments(
            f'memory: {got}; "action" must be one of {", ".join(MEMORY_ACTIONS)}, '
            'for example {"action":"add","file":"memory","text":"..."}'
        )
    entries = data.get("entries")
    if isinstance(entries, list) and len(entries) > ENTRIES_MAX:
        raise InvalidArguments(
            f"memory: {len(entries):,} entries are over the limit of {ENTRIES_MAX:,}; a"
            " consolidate names each entry of one file once, and no file holds as many"
        )
    _refuse_unknown_keys("memory", _MEMORY_MODELS[str(action)], data, f"{action}.")
    return _MEMORY.validate_python(data)


def parse_memory(arguments: str) -> AddArgs | ReplaceArgs | RemoveArgs | NoteArgs | ConsolidateArgs:
    return _parse("memory", arguments, _validate_memory)


def parse_tool(tool: str, arguments: str) -> BaseModel:
    """The parsed arguments of recall or memory; InvalidArguments for any other tool."""
    if tool == "recall":
        return parse_recall(arguments)
    if tool == "memory":
        return parse_memory(arguments)
    raise InvalidArguments(f"{tool[:64]!r} is not a memory tool")
