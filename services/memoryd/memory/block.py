"""The memory block (spec 4): soul.md, memory.md and user.md rendered for the system prompt.

    # soul.md
    <soul.md, trimmed>

    # memory.md (1,474 of 2,200 characters)
    <entries, separated by a line holding only §>

    # user.md (0 of 1,375 characters)
    (empty)

The count is the file's text (what counts against the limit; entries.py). Each entry of memory.md
and user.md is checked again as the block is built, since the owner can edit the files: an entry
that fails the check, or repeats an earlier one, is left out and logged with its file and reason.
soul.md is the owner's and is not checked. A file over its limit, missing or unreadable refuses
the whole block (BlockRefused): a session starting with no memory and no sign of it is what this
prevents. Each file is read once, so the block is right while a write happens beside it.
"""

import logging

from memoryd.errors import BlockRefused, FileDamaged
from memoryd.home import Home
from memoryd.memory import check, entries
from memoryd.memory.entries import LIMITS, count
from memoryd.memory.memfiles import read_text

log = logging.getLogger(__name__)

EMPTY = "(empty)"
DUPLICATE_REASON = "the same entry appears earlier in the file"


def over_limit_reason(name: str, length: int) -> str:
    return f"{name} is over its limit: {count(length)} of {count(LIMITS[name])} characters"


def _read(home: Home, name: str) -> str:
    try:
        return read_text(home.memory_file(name), name)
    except FileDamaged as e:
        raise BlockRefused(str(e)) from None


def left_out(file_entries: list[str]) -> list[tuple[int, str, str]]:
    """(number from 1, entry, reason) for each entry the block leaves out."""
    out: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    for number, entry in enumerate(file_entries, start=1):
        reason = check.problem(entry)
        if reason is None and entry in seen:
            reason = DUPLICATE_REASON
        if reason is None:
            seen.add(entry)
        else:
            out.append((number, entry, reason))
    return out


def shown_entries(name: str, file_entries: list[str]) -> list[str]:
    """The entries that pass the check, first copies only; the others logged."""
    skipped = left_out(file_entries)
    for number, _, reason in skipped:
        log.warning("%s: entry %d left out of the memory block: %s", name, number, reason)
    numbers = {number for number, _, _ in skipped}
    return [e for n, e in enumerate(file_entries, start=1) if n not in numbers]


def _section(name: str, file_entries: list[str]) -> str:
    length = entries.length(file_entries)
    body = entries.render(shown_entries(name, file_entries)) or EMPTY
    return f"# {name} ({count(length)} of {count(LIMITS[name])} characters)\n{body}"


def build(home: Home) -> str:
    """The block text; BlockRefused naming the file when one is over its limit or unreadable."""
    soul = _read(home, "soul.md").strip()
    if len(soul) > LIMITS["soul.md"]:
        raise BlockRefused(over_limit_reason("soul.md", len(soul)))
    sections = [f"# soul.md\n{soul or EMPTY}"]
    for name in ("memory.md", "user.md"):
        file_entries = entries.parse(_read(home, name))
        length = entries.length(file_entries)
        if length > LIMITS[name]:
            raise BlockRefused(over_limit_reason(name, length))
        sections.append(_section(name, file_entries))
    return "\n\n".join(sections)
