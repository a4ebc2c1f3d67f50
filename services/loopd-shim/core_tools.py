"""The core tools the model sees in every session (spec 9), and the two answered in-process.

clock, recall, memory, find_tool, call_tool are declared in the baseline's tools array. recall and
memory carry proto's schemas (spec 5). clock and find_tool are answered here; call_tool names
another tool and is sent on to brokerd-shim as that tool.
"""

import json

from proto.errors import InvalidArguments
from proto.labels import Label
from proto.records import now_rfc3339
from proto.tools import MEMORY_SCHEMA, RECALL_SCHEMA, parse_json_object

_NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}

CORE_TOOLS: tuple[dict, ...] = (
    {
        "name": "clock",
        "description": "The current date and time in UTC.",
        "parameters": _NO_ARGUMENTS,
    },
    {
        "name": "recall",
        "description": (
            "Search your notes and past sessions. Each hit starts with its source: identity, "
            "memory, or memory-tainted (from a session that had read untrusted content)."
        ),
        "parameters": RECALL_SCHEMA,
    },
    {
        "name": "memory",
        "description": (
            'Edit memory.md or user.md (file "memory" or "user"): add text, replace or remove an '
            "old entry named by its exact text, or consolidate every entry (keep, text, move to "
            "notes, drop). note records something seen or told. Takes effect next session."
        ),
        "parameters": MEMORY_SCHEMA,
    },
    {
        "name": "find_tool",
        "description": "Find tools beyond these; run one with call_tool.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "additionalProperties": False,
        },
    },
    {
        "name": "call_tool",
        "description": "Run a tool that find_tool found.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        },
    },
)

# What find_tool can tell the model about: tools brokerd-shim runs when asked by name.
KNOWN_TOOLS: tuple[dict, ...] = (
    CORE_TOOLS[1],
    CORE_TOOLS[2],
    {
        "name": "http_fetch",
        "description": "Fetch a web page. Its text is untrusted.",
        "parameters": {
            "type": "object",
            "properties": {"url": {"type": "string"}},
            "required": ["url"],
            "additionalProperties": False,
        },
    },
)

LOCAL_LABEL = Label(klass="public", untrusted=False)
LOCAL_TOOLS = frozenset({"clock", "find_tool"})


def parse_object(tool: str, arguments: str) -> dict:
    """The JSON object the model wrote as arguments; empty text counts as {}."""
    return parse_json_object(arguments, tool, blank_is_empty=True)


def clock(arguments: str) -> str:
    if parse_object("clock", arguments):
        raise InvalidArguments("clock: takes no arguments")
    return now_rfc3339()


def find_tool(arguments: str) -> str:
    """The known tools whose name or description holds the query (all of them without one)."""
    data = parse_object("find_tool", arguments)
    query = data.get("query", "")
    if set(data) - {"query"} or not isinstance(query, str):
        raise InvalidArguments('find_tool: arguments are {"query": string}')
    words = query.lower().split()
    found = [
        tool
        for tool in KNOWN_TOOLS
        if all(w in (tool["name"] + " " + tool["description"]).lower() for w in words)
    ]
    if not found:
        names = ", ".join(tool["name"] for tool in KNOWN_TOOLS)
        return f"no tool matches {query!r}; known tools: {names}"
    return json.dumps(found, ensure_ascii=False)


def run_local(name: str, arguments: str) -> str:
    """Answer clock or find_tool; InvalidArguments when the model's arguments are wrong."""
    return clock(arguments) if name == "clock" else find_tool(arguments)


def unwrap_call_tool(arguments: str) -> tuple[str, str]:
    """The tool call_tool names and that tool's arguments as JSON text."""
    data = parse_object("call_tool", arguments)
    name, inner = data.get("name"), data.get("arguments", {})
    if set(data) - {"name", "arguments"} or not isinstance(name, str) or not name:
        raise InvalidArguments('call_tool: arguments are {"name": string, "arguments": object}')
    if name == "call_tool":
        raise InvalidArguments("call_tool: cannot call call_tool")
    if isinstance(inner, str):
        return name, inner
    if not isinstance(inner, dict):
        raise InvalidArguments("call_tool: arguments must be an object")
    return name, json.dumps(inner, ensure_ascii=False, separators=(",", ":"))
