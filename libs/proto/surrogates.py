"""Half of a surrogate pair: a character JSON can spell but UTF-8 cannot write.

JSON's escapes can write "\\udc00" alone (a model that cuts an emoji's escape in half does), and
json.loads gives it back as a str holding U+DC00. Such a str is not text: it has no UTF-8 form, so
it cannot go into a file, a journal or audit line, or a frame, and whatever tries to write it fails
far from where it came in (a note already planned, the audit line of a decision already made).

- not_text() finds the first string or key of a parsed value that holds one, so that the parse of
  a tool's arguments refuses it in one line naming the field, as every other bad argument is;
- json_line() writes a value as one line of JSON that no such character can break: it is written
  as JSON's escape, which reads back as the same str.

A key or string holding one is named as memory-mcp names it at its line reader: "holds half of a
surrogate pair, which is not text".
"""

import json
import re
from typing import Any

from proto.messages import WHERE_LIMIT

SURROGATE = re.compile("[\ud800-\udfff]")
# Where JSON text spells one: \uD800 to \uDFFF (a pair's two halves decode to one character and are
# let through by not_text; this only says whether a walk of the parsed value is needed).
_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
NOT_TEXT = "holds half of a surrogate pair, which is not text"
# A path deeper than this is named by its first parts: nested JSON may go hundreds of levels.
PATH_PARTS = 8


def may_hold(text: str) -> bool:
    """False when JSON text surely parses to no lone surrogate: it neither holds one nor spells
    one with an escape. Saves the walk of every call's arguments."""
    return SURROGATE.search(text) is not None or _ESCAPE.search(text) is not None


def _where(path: tuple[str | int, ...]) -> str:
    parts = [str(p)[:WHERE_LIMIT] for p in path[:PATH_PARTS]]
    more = len(path) - PATH_PARTS
    return ".".join(parts) + (f"... ({more} more levels)" if more > 0 else "")


def not_text(value: Any) -> str | None:
    """The sentence naming the first string (or key) of a parsed JSON value that holds half of a
    surrogate pair, in the order the text gives them; None when every one is text. A string is
    named by its path (entries.0.text), a key by the object holding it."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if SURROGATE.search(item):
                return f"{_where(path) or 'the value'}: the string {NOT_TEXT}"
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and SURROGATE.search(key):
                    where = f"a key of {_where(path)}" if path else "a key"
                    return f"{where} {NOT_TEXT}"
            stack.extend(((*path, k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(item))))
    return None


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_line(value: Any) -> str:
    """value as one compact line of JSON, other characters as they are (ensure_ascii off), each
    half of a surrogate pair as JSON's escape: the line always has a UTF-8 form and reads back as
    value. (json.dumps writes such a character raw, and only ever inside a string.)"""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return SURROGATE.sub(_escaped, text)
