"""Output for a terminal whose locale is narrower than the memory (Latin-1, ASCII, EUC-JP).

Python writes stdout in the locale's encoding and stops at the first character it cannot hold, a
traceback instead of the rest of the answer; memory holds any language and emoji. Every command
that prints memory text (bxctl, loopd-shim, brokerd-shim, memory-mcp) calls
escape_what_cannot_be_shown() first, so such a character is written as escape() writes one it
hides (\\u{4F1A}): the owner reads what the memory holds, and nothing is lost or mistaken.
"""

import codecs
import contextlib
import sys

ERRORS = "proto-escape"


def shown_escaped(e: UnicodeError) -> tuple[str, int]:
    """The error handler: each character the encoding cannot hold as \\u{XXXX}."""
    if not isinstance(e, UnicodeEncodeError):
        raise e
    shown = "".join(f"\\u{{{ord(ch):04X}}}" for ch in e.object[e.start : e.end])
    return shown, e.end


codecs.register_error(ERRORS, shown_escaped)


def escape_what_cannot_be_shown() -> None:
    """stdout and stderr write escapes for what their encoding cannot hold, never a traceback.
    A stream that is closed or not a text file (a test's capture) is left as it is."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors=ERRORS)  # type: ignore[union-attr]
