"""escape(): make any text safe to print on a terminal and to post in a chat.

- Control characters (C0 but newline and tab, DEL, C1), format characters, unassigned and private
  code points (as Unicode 16 assigns them), line and paragraph separators, and every code point of
  the invisible table are shown as escapes: \\x1b, \\u{200B}. A backslash is doubled so an
  escape cannot be forged. Only a joiner or variation selector where a script or an emoji sequence
  puts one (a Persian word's ZWNJ, the ZWJ of 👨‍👩‍👧, the VS16 of ❤️: proto.joiners) stays as
  written, since it is part of what the owner wrote, not something hidden in it.
- Markdown markup and @mentions are made inert with a backslash: \\*, \\_, \\`, \\[, \\@ ...
  (markup=False leaves them as they are, for a terminal that renders no markup).
So what the reader sees is exactly what the text holds, and nothing in it can act.
"""

from proto.graphic import is_not_graphic
from proto.invisible import is_invisible
from proto.joiners import joins

_MARKUP = frozenset("`*_~[]<>|@")


def hidden(ch: str) -> bool:
    """True for a character shown as an escape: a control, format, surrogate, private-use,
    unassigned, line or paragraph separator or invisible code point, as Unicode 16 assigns them
    (proto.graphic: the interpreter's own tables may be older), newline and tab aside."""
    if " " <= ch <= "~" or ch in "\n\t":
        return False
    cp = ord(ch)
    return is_invisible(cp) or is_not_graphic(cp)


def hidden_at(text: str, i: int) -> bool:
    """hidden(text[i]), but for a joiner or variation selector that its neighbours make part of
    the writing (proto.joiners)."""
    ch = text[i]
    return hidden(ch) and not joins(text, i)


def escape_char(ch: str) -> str:
    """The escape a hidden character is shown as: \\x1b below U+0080, \\u{200B} above."""
    cp = ord(ch)
    if cp < 0x80:
        return f"\\x{cp:02x}"
    return f"\\u{{{cp:04X}}}"


def escape(text: str, *, markup: bool = True) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif markup and ch in _MARKUP:
            out.append("\\" + ch)
        elif ch in "\n\t":
            out.append(ch)
        elif " " <= ch <= "~":
            out.append(ch)
        elif hidden_at(text, i):
            out.append(escape_char(ch))
        else:
            out.append(ch)
    return "".join(out)


LOG_LIMIT = 1000


def for_log(text: object, limit: int = LOG_LIMIT) -> str:
    """text made fit for one log line: escaped as escape() does (no markup), newlines and tabs
    too, and cut to limit characters with the count of what was left out. A peer's string goes
    through this before any log line, so it can neither forge a line nor flood the log."""
    text = str(text)
    cut = len(text) - limit if len(text) > limit else 0
    shown = escape(text[:limit] if cut else text, markup=False)
    shown = shown.replace("\n", "\\x0a").replace("\t", "\\x09")
    return f"{shown}... ({cut} more characters)" if cut else shown
