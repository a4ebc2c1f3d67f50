"""memoryd's edit journal, read for what a client's sessions wrote as untrusted.

The recall log (recalled.py) is the first record of whether one of a client's sessions was given
memory-tainted text, but the owner may remove its months: it has no size limit and keeps his
search words after a forget. The edit journal, {home}/memory/edits/YYYY-MM.jsonl, is a record the
removal does not take: memoryd writes one line per applied edit, naming the session and, for a
session that had read untrusted content, "untrusted": true (memoryd's journal/journal.py). A line
of one of the client's sessions (mcp-<client>-<start time>, session.py) that says so means a
conversation of the client holds untrusted text, as a tainted recall does.

A client registered both ways (docs/memory-mcp.md) writes untrusted lines from its untrusted
registration whatever it was given, and those say nothing of what the trusted one's conversation
holds: memory-mcp names an untrusted registration's calls UNTRUSTED_CALL-N (call_id), the journal
keeps each line's call, and such lines are passed over. A line another memory-mcp wrote before it
named calls so counts: failing closed, once, until the owner's trust-again.

The journal also tells whether the client's sessions wrote at all: a recall log with no month
although the journal names the client's sessions was removed, not empty, and its silence says
nothing (startstate.py fails closed on it).

Cost: as recalled.py reads the recall log (its month_lines: newest month first, each from its end,
in pieces, a piece without the client's id passed over with one search), stopping at the first
line that answers. A line holding the client's id that does not parse (torn by a crash, edited by
hand) and holds "untrusted": true counts as untrusted: failing closed. What the journal cannot
tell: a session given tainted text that wrote nothing.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

from memory_mcp.errors import MemoryMcpError
from memory_mcp.recalled import START_TIME, UNKNOWN_TIME, Given, month_lines
from memory_mcp.session import PREFIX

UNTRUSTED = re.compile(rb'"untrusted"\s*:\s*true')
LINE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z")  # journal.py's TIME_FORMAT


UNTRUSTED_CALL = "mcp-untrusted-call-"
CALL = "mcp-call-"


def call_id(registered_untrusted: bool, number: int) -> str:
    """The id of a connection's number-th call, naming an untrusted registration's as such."""
    return f"{UNTRUSTED_CALL if registered_untrusted else CALL}{number}"


class JournalUnreadable(MemoryMcpError):
    """The edit journal cannot be read: whether the client wrote as untrusted is unknown."""


@dataclass(frozen=True)
class Written:
    """What the journal shows of a client: its newest untrusted write, and its newest session."""

    untrusted: Given | None
    named: str | None


def folder(home: Path) -> Path:
    return home / "memory" / "edits"


def newest_untrusted(home: Path, client: str, named_enough: bool) -> Written:
    """The client's newest session the journal shows writing as untrusted. When named_enough, the
    read also stops at the first line of any of the client's sessions (named: that session)."""
    ours = re.compile(re.escape(PREFIX + client) + "-" + START_TIME)
    needle = f"{PREFIX}{client}-".encode()
    named = None
    for line in month_lines(folder(home), needle, JournalUnreadable):
        session, untrusted, when = _read(line, ours)
        if untrusted:
            return Written(Given(session or "(a damaged line)", when), session or named)
        if session is not None:
            named = named or session
            if named_enough:
                break
    return Written(None, named)


def _read(line: bytes, ours: re.Pattern) -> tuple[str | None, bool, str]:
    """The line's session when it is one of the client's (not its untrusted registration's),
    whether it wrote as untrusted, and when."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        record = None
    if not isinstance(record, dict):  # not as memoryd writes it: untrusted if it may say so
        return None, UNTRUSTED.search(line) is not None, UNKNOWN_TIME
    session, call = record.get("session"), record.get("call")
    if not isinstance(session, str) or not ours.fullmatch(session):
        return None, False, UNKNOWN_TIME  # the client's id was only in an entry's text
    if isinstance(call, str) and call.startswith(UNTRUSTED_CALL):
        return None, False, UNKNOWN_TIME  # its untrusted registration's: untrusted as registered
    when = record.get("time")
    when = when if isinstance(when, str) and LINE_TIME.fullmatch(when) else UNKNOWN_TIME
    return session, record.get("untrusted") is True, when
