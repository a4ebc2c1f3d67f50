"""Defusing recalled text: no snippet can pass for a hit's header line.

A recall answer is read by a model, and a model (or a terminal) breaks lines at more than "\\n":
at "\\r", "\\x0b", "\\x0c", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029. And it reads a line the
way it looks, not the way it is encoded: "[2]" in fullwidth brackets, after a leading space, with
a combining accent before the bracket or an enclosing circle after the digit, or with a zero-width
character between the digits, still looks like the "[2] " that starts a hit. So a recalled text
that holds "\\u2028\\u0301[3] identity · moved ..." would add a hit of its own, with a tag it was
never given.

defuse() makes a snippet safe in two steps, both pure:

1. Every control, format (bidi, zero-width), unassigned, private-use, surrogate, line or paragraph
   separator and invisible code point is shown as an escape, as proto.escape shows it: "\\x1b",
   "\\u{202E}" (a joiner or variation selector where a script or an emoji sequence puts one stays,
   as there: it breaks no line, and step 2 reads every line with it taken out). Newline and tab
   are content and stay; a "\\r\\n" pair is an ordinary newline. After this the only line
   boundary left in the snippet is "\\n".
2. Each line whose reader's view (seen() below: NFKC, then every character a reader does not see
   taken out, until nothing changes) starts like a header, "[" digits "]", gets a backslash in
   front: its view then starts with "\\", which no header does.

A clean text (no control or invisible character, no line that looks like it starts with "[n]")
comes out unchanged.

The spec's 600 characters bound a snippet as the reader gets it, escapes and all: shown_width()
is what query.snippet measures its window by, and defuse_within() cuts what is still over.
"""

import re
import unicodedata

from proto.escape import escape_char, hidden_at
from proto.graphic import is_grapheme_extend, is_not_graphic
from proto.invisible import is_invisible

ELLIPSIS = "…"
# Marks and spaces by the interpreter's own tables. Controls, format, unassigned and private code
# points and the marks of Unicode 16 come from proto.graphic instead: the interpreter's tables
# (Unicode 14 in Python 3.11) take every character assigned since, an emoji as much as a mark,
# for unassigned, and so for unseen.
_UNSEEN_CATEGORIES = frozenset({"Mn", "Mc", "Me", "Zs"})
# What a header starts with, as a reader sees the line: "[2]", "[12]" (any decimal digits).
HEADER_START = re.compile(r"\[\d+\]")
_ASCII_UNSEEN = re.compile(r"[\x00-\x20\x7f]+")


def escape_controls(text: str) -> str:
    """text with every control, format and invisible code point but newline and tab escaped."""
    text = text.replace("\r\n", "\n")
    if all(" " <= ch <= "~" or ch in "\n\t" for ch in text):
        return text
    return "".join(escape_char(ch) if hidden_at(text, i) else ch for i, ch in enumerate(text))


def shown_width(text: str, i: int) -> int:
    """How many characters text[i] takes in the defused text: its escape's length when it is
    escaped, else 1. The CR of a CRLF pair counts 1, as it did before its pair became one newline:
    a text of ordinary characters is measured by its length."""
    ch = text[i]
    if not hidden_at(text, i) or (ch == "\r" and text[i + 1 : i + 2] == "\n"):
        return 1
    return len(escape_char(ch))


def unseen(ch: str) -> bool:
    """True for a character that shows nothing of its own where it stands."""
    cp = ord(ch)
    return (
        ch.isspace()
        or is_invisible(cp)
        or is_not_graphic(cp)
        or is_grapheme_extend(cp)
        or unicodedata.category(ch) in _UNSEEN_CATEGORIES
    )


def seen(line: str) -> str:
    """line as a reader sees it: NFKC-normalised (fullwidth, superscript and other look-alike
    brackets and digits folded), with every unseen character taken out. Taking characters out can
    bring two others together that NFKC then composes, so the two steps repeat until the line no
    longer changes."""
    if line.isascii():
        return _ASCII_UNSEEN.sub("", line)
    while True:
        folded = unicodedata.normalize("NFKC", line)
        shown = "".join(ch for ch in folded if not unseen(ch))
        if shown == line:
            return shown
        line = shown


def reads_as_header(line: str) -> bool:
    """True when line, as a reader sees it, starts like a hit's header."""
    return HEADER_START.match(seen(line)) is not None


def defuse(snippet_text: str, *, escaped: bool = True) -> str:
    """The snippet with control characters escaped and no line that reads as a hit's header.
    escaped=False leaves the escaping to the caller's reader (bxctl escapes whatever memoryd
    answers the owner; escaping here too would show ESC as \\\\x1b): CRLF still becomes LF and
    header-like lines still get their backslash."""
    text = escape_controls(snippet_text) if escaped else snippet_text.replace("\r\n", "\n")
    lines = text.split("\n")
    return "\n".join("\\" + line if reads_as_header(line) else line for line in lines)


def defuse_within(snippet_text: str, limit: int, *, escaped: bool = True) -> str:
    """defuse(snippet_text), cut to at most limit characters as the reader gets them (every escape
    counted whole), at a character of the snippet, never inside an escape, with an ellipsis where
    it is cut. The window query.snippet cuts already counts escapes; a header-like line's
    backslash (one a line) is what can still take it over."""

    def shown(part: str) -> tuple[str, int]:
        out = defuse(part, escaped=escaped)
        return out, len(out) if escaped else len(escape_controls(out))

    whole, length = shown(snippet_text)
    if length <= limit:
        return whole
    # shown(snippet_text[:fits]) leaves room for the ellipsis; snippet_text[:over] does not.
    fits, over = 0, len(snippet_text)
    while over - fits > 1:
        middle = (fits + over) // 2
        if shown(snippet_text[:middle])[1] <= limit - 1:
            fits = middle
        else:
            over = middle
    return shown(snippet_text[:fits])[0] + ELLIPSIS
