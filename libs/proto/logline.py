"""Log lines that stay one line each, whatever text went into them.

Every role formats its log through OneLineFormatter: in the message, control characters (newline
and escape included), line and paragraph separators and format characters are written as \\xNN
or \\u{NNNN}, and a message is cut at LINE_LIMIT characters. So a peer's string that reached a log
line by any path can neither forge another line nor paint the terminal nor flood the log. A
traceback (a bug, never bad input) is appended below its line as logging does.

Every role (memoryd, the two shims, memory-mcp) calls configure_role() once at start, so their
lines look alike: time, logger name (which starts with the role's package), level, message. The
time is UTC and says so (2026-11-01T05:30:01.805Z), as every time memoryd writes elsewhere (the
journal, recall log, note headers): a role run in the owner's zone would otherwise log local time
with no zone, which matches no journal line and goes back an hour when summer time ends. A role
that cannot start says so in one line on stderr and exits EXIT_START_FAILED, the same for all.
"""

import logging
import sys
import time
import unicodedata

from proto import logrotate

LINE_LIMIT = 4000
ROLE_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
# The exit status of every role whose start failed (bad configuration, a live socket, a home that
# cannot be used). 1 stays for "the command ran and said no" (a refused call in the driver).
EXIT_START_FAILED = 2
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
    # UTC with its zone, to the millisecond: lines sort across summer time and match the journal.
    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.converter = time.gmtime

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        record.message = one_line(record.message)
        return super().formatMessage(record)


def configure(fmt: str, level: int = logging.INFO, rotate: bool = False) -> None:
    """logging.basicConfig to stderr with fmt, through OneLineFormatter; a log file named by
    BOXMAKER_LOG_FILE is followed, and with rotate kept bounded too (logrotate.py)."""
    handler = logrotate.handler_from_env(moves=rotate) or logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(fmt))
    logging.basicConfig(level=level, handlers=[handler])


def configure_role(level: int = logging.INFO, rotate: bool = False) -> None:
    """The one log setup of every role: ROLE_FORMAT to stderr, one line per event. A role's
    serve passes rotate; its child processes, which share its log, only follow it."""
    configure(ROLE_FORMAT, level, rotate)
