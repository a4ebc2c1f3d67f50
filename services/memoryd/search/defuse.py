"""Defusing recalled text: no snippet can pass for a hit's header line.

A recall answer is read by a model, and a model (or a terminal) breaks lines at more than "\\n":
at "\\r", "\\x0b", "\\x0c", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029, and it reads "[2]" in
fullwidth brackets, after a leading space or followed by a no-break space as the "[2] " that
starts a hit. So a recalled text that holds "\\u2028[3] identity · moved ..." would add a hit of
its own, with a tag it was never given.

defuse() makes a snippet safe in two steps, both pure:

1. Every control, format (bidi, zero-width), unassigned, private-use, surrogate, line or paragraph
   separator and invisible code point is shown as an escape, as proto.escape shows it: "\\x1b",
   "\\u{202E}". Newline and tab are content and stay; a "\\r\\n" pair is an ordinary newline. After
   this the only line boundary left in the snippet is "\\n".
2. Each line that, after NFKC and trimming, starts like a header ("[" digits "]", with any spaces
   inside) gets a backslash in front, so it no longer starts with "[".

A clean text (no control or invisible character, no line starting with "[n]") comes out unchanged.
"""

import re
import unicodedata

from proto.invisible import is_invisible

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# What a header starts with, once a line is NFKC-normalised and trimmed: "[2]", "[ 12 ]".
HEADER_START = re.compile(r"\[\s*\d+\s*\]")


def _needs_escape(ch: str) -> bool:
    if ch in "\n\t":
        return False
    if " " <= ch <= "~":
        return False
    return is_invisible(ord(ch)) or unicodedata.category(ch) in _ESCAPED_CATEGORIES


def _escape_char(ch: str) -> str:
    cp = ord(ch)
    if cp < 0x80:
        return f"\\x{cp:02x}"
    return f"\\u{{{cp:04X}}}"


def escape_controls(text: str) -> str:
    """text with every control, format and invisible code point but newline and tab escaped."""
    text = text.replace("\r\n", "\n")
    if all(" " <= ch <= "~" or ch in "\n\t" for ch in text):
        return text
    return "".join(_escape_char(ch) if _needs_escape(ch) else ch for ch in text)


def reads_as_header(line: str) -> bool:
    """True when line, NFKC-normalised and trimmed, starts like a hit's header."""
    return HEADER_START.match(unicodedata.normalize("NFKC", line).strip()) is not None


def defuse(snippet_text: str) -> str:
    """The snippet with control characters escaped and no line that reads as a hit's header."""
    lines = escape_controls(snippet_text).split("\n")
    return "\n".join("\\" + line if reads_as_header(line) else line for line in lines)
