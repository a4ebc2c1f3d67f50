"""Log lines that stay one line each, whatever text went into them.

Every role formats its log through OneLineFormatter: in the message, control characters (newline
and escape included), line and paragraph separators and format characters are written as \\xNN
or \\u{NNNN}, and a message is cut at LINE_LIMIT characters. So a peer's string that reached a log
line by any path can neither forge another line nor paint the terminal nor flood the log. A
traceback (a bug, never bad input) is appended below its line as logging does.
"""

import logging
import sys
import unicodedata

LINE_LIMIT = 4000
_ESCAPED = frozenset({"Cc", "Cf", "Zl", "Zp"})


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    cut = len(text) - limit if len(text) > limit else 0
    if cut:
        text = text[:limit]
    out = []
    for ch in text:
        if " " <= ch <= "~" or unicodedata.category(ch) not in _ESCAPED:
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{{{ord(ch):04X}}}")
    if cut:
        out.append(f"... ({cut} more characters)")
    return "".join(out)


class OneLineFormatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        record.message = one_line(record.message)
        return super().formatMessage(record)


def configure(fmt: str, level: int = logging.INFO) -> None:
    """logging.basicConfig to stderr with fmt, through OneLineFormatter."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(fmt))
    logging.basicConfig(level=level, handlers=[handler])
