"""Every line on stdin gets an answer as JSON-RPC 2.0 says, even one the SDK would drop.

The SDK's stdio transport hands a line it cannot validate to its session as an exception, which is
logged and never answered: a client that sent a line that is not JSON, a request whose id is an
object, arguments nested deeper than the SDK's JSON parser goes, or a batch waited for an answer
that never came. screen() looks at each line first and says what to answer when the SDK would
not; a line it passes is one the SDK validates the same way (the same call) and serves.

The answers (JSON-RPC 2.0, section 5.1 and the examples of section 7):
- a line that is not JSON: Parse error (-32700), id null;
- JSON that is not one valid Request, Notification or Response object: Invalid Request (-32600),
  with the message's id when it has one MCP allows (a string or a whole number) and null when it
  has none or another (an object, an array, true, 1.5, or null beside a method): a client cannot
  be told an id the answer could not carry;
- a batch (a JSON array): one Invalid Request, id null, and no element is carried out. The MCP
  versions since 2025-06-18 have no batches, and the SDK serves none in any version (its HTTP
  transport answers a batch exactly so); carrying out the elements one by one would give each a
  separate answer, which is not a batch's answer either. One line, one answer, and nothing done
  that the answer does not say.
- a string that holds half of a surrogate pair (JSON can spell it, "\\ud800", but UTF-8 cannot
  write it, and the SDK, echoing it in an id or a "Method not found", dies writing the answer):
  Invalid Request;
- a message nested more than MAX_DEPTH deep: Invalid Request, with its id when it has one, found
  without the recursive parser (top_level_id) when Python's own cannot go that deep.
A blank line carries no message and gets no answer. A valid notification or response gets none
either, as JSON-RPC says.
"""

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from pydantic import ValidationError

# Far more than any tool call's arguments need, and well inside what the SDK's parser takes.
MAX_DEPTH = 64


@dataclass(frozen=True)
class Refusal:
    """The JSON-RPC error a line is answered with."""

    ident: int | str | None
    code: int
    message: str


NOT_JSON = "Parse error: the line is not JSON"
NOT_OBJECT = "Invalid Request: a message is one JSON object"
EMPTY_BATCH = "Invalid Request: an empty batch"
BATCH = (
    "Invalid Request: batches are not served (MCP has none since 2025-06-18); nothing in it was"
    " carried out; send each message on a line of its own"
)
BAD_ID = "Invalid Request: an id is a string or a whole number"
LONE_SURROGATE = "Invalid Request: a string holds half of a surrogate pair, which is not text"
NOT_MESSAGE = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"


def too_deep_text() -> str:
    return f"Invalid Request: the message is nested more than {MAX_DEPTH} levels deep"


def valid_id(value: Any) -> bool:
    """An id MCP allows and an answer can carry: a whole number, or a string that is text."""
    if isinstance(value, str):
        return not _lone(value)
    return isinstance(value, int) and not isinstance(value, bool)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def screen(line: str) -> Refusal | None:
    """The error to answer line with, or None when the SDK takes it as it is."""
    found = screen_message(line)
    return found if isinstance(found, Refusal) else None


def screen_message(line: str) -> Refusal | dict[str, Any]:
    """The error to answer line with, or the message the SDK takes (parsed, as a dict)."""
    try:
        value = json.loads(line, parse_constant=_no_constant)
    except RecursionError:
        return Refusal(top_level_id(line), types.INVALID_REQUEST, too_deep_text())
    except ValueError:
        return Refusal(None, types.PARSE_ERROR, NOT_JSON)
    if isinstance(value, list):
        return Refusal(None, types.INVALID_REQUEST, BATCH if value else EMPTY_BATCH)
    if not isinstance(value, dict):
        return Refusal(None, types.INVALID_REQUEST, NOT_OBJECT)
    ident = value.get("id")
    # A null id is only an error response's, about a message its sender could not read.
    if "id" in value and not valid_id(ident) and (ident is not None or "method" in value):
        return Refusal(None, types.INVALID_REQUEST, BAD_ID)
    ident = ident if valid_id(ident) else None
    if _SURROGATE_ESCAPE.search(line) and holds_lone_surrogate(value):
        return Refusal(ident, types.INVALID_REQUEST, LONE_SURROGATE)
    if depth(value) > MAX_DEPTH:
        return Refusal(ident, types.INVALID_REQUEST, too_deep_text())
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return Refusal(ident, types.INVALID_REQUEST, NOT_MESSAGE)
    return value


def _lone(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def holds_lone_surrogate(value: Any) -> bool:
    """True when a string of value (or a member's name) holds half of a surrogate pair, which
    JSON's escapes can spell but no answer can carry: UTF-8 has no way to write it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _lone(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def depth(value: Any) -> int:
    """How deep value nests (a scalar 0, [] or {} 1), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


# Where JSON spells half of a surrogate pair: \uD800 to \uDFFF (the pair's two halves together
# decode to one character; only a half alone is refused).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# What a scan of the line stops at: outside a string, a string's start or a run of brackets;
# inside one, its end or an escape.
_MARK = re.compile(r'"|[\[\]{}]+')
_IN_STRING = re.compile(r'["\\]')
_COLON = re.compile(r"\s*:\s*")


def top_level_id(text: str) -> int | str | None:
    """The "id" member of the object text holds, found without parsing what is nested (which may
    be too deep to parse), or None when there is none JSON-RPC allows.

    One scan from left to right, each character looked at once: a line built to make a scan
    start again at every quote (an unterminated string of escaped quotes) costs no more than any
    other line of its length. The scan gives up at a string that does not end."""
    if not text.lstrip().startswith("{"):
        return None
    level = 0
    at = 0
    while (mark := _MARK.search(text, at)) is not None:
        if mark.group() != '"':
            level += _opened(mark.group())
            at = mark.end()
            continue
        end = _string_end(text, mark.start())
        if end is None:
            return None
        at = end
        colon = _COLON.match(text, end) if level == 1 else None
        if colon is None:
            continue  # nested, or a string value rather than a member's name
        try:
            if json.loads(text[mark.start() : end]) != "id":
                continue
        except ValueError:
            return None
        if text[colon.end() : colon.end() + 1] in "[{":
            continue
        try:
            value, _ = json.JSONDecoder().raw_decode(text, colon.end())
        except ValueError:
            return None
        return value if valid_id(value) else None
    return None


def _opened(brackets: str) -> int:
    """How many levels a run of brackets opens (less than 0: closes)."""
    opened = brackets.count("[") + brackets.count("{")
    return 2 * opened - len(brackets)


def _string_end(text: str, start: int) -> int | None:
    """Where the string opening at start ends (just past its closing quote), or None when the
    line ends first."""
    at = start + 1
    while (mark := _IN_STRING.search(text, at)) is not None:
        if mark.group() == '"':
            return mark.end()
        at = mark.end() + 1  # the escaped character, whatever it is, belongs to the string
    return None
