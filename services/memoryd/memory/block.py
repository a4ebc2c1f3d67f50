"""The memory block (spec 4): soul.md, memory.md and user.md rendered for the system prompt.

    # soul.md
    <soul.md, trimmed>

    # memory.md (1,474 of 2,200 characters)
    <entries, separated by a line holding only §>

    # user.md (0 of 1,375 characters)
    (empty)

The count is the file's text (what counts against the limit; entries.py). Each entry of memory.md
and user.md is checked again as the block is built, since the owner can edit the files: an entry
that fails the check, or repeats an earlier one (canonically, entries.canonical: the same text in
the other Unicode normal form), is left out and logged with its file and reason.
So is an entry whose class is above [index] max_class (classrule.entry_class: the class it came in
with, from the journal): max_class may have been lowered since it came in, and identity reaches
every prompt with no label, so it must never hold more than recall may show. One whose line names
no class (a hand edit journalled while the journal was not whole, handclass.py) is taken as the
highest and said as unknown. An undo or a restore only changes the files, and every block is built
here, so neither can bring such an entry back.
soul.md is the owner's and is not checked. A file over its limit, missing or unreadable refuses
the whole block (BlockRefused): a session starting with no memory and no sign of it is what this
prevents. Each file is read once, so the block is right while a write happens beside it.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.errors import BlockRefused, FileDamaged
from memoryd.home import Home
from memoryd.journal.byfile import walk_back
from memoryd.journal.journal import Journal
from memoryd.memory import check, entries, handclass
from memoryd.memory.entries import LIMITS, count
from memoryd.memory.memfiles import read_text
from memoryd.trust import classrule
from proto.trim import trim

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


# For the entries of a file, the class source of the journal line that brought each in.
CameWith = Callable[[str, list[str]], dict[str, str | None]]


@dataclass(frozen=True)
class Classes:
    """The highest class the block may show, and where each entry's class is found: memoryd's
    journal index, or (None) a walk back through the journal, for a reader without one."""

    max_class: str = "private"
    came_with: CameWith | None = None

    def above(self, home: Home, file: str, texts: list[str]) -> dict[str, str]:
        """Of texts (entries of file), each whose class is above max_class, with that class."""
        if not classrule.anything_above(self.max_class) or not texts:
            return {}
        try:
            if self.came_with is not None:
                sources = self.came_with(file, texts)
            else:
                sources = walk_back(Journal(home).month_files(), file, texts)
        except OSError as e:
            # Unknown classes could let a lowered max_class through: no block rather than that.
            reason = e.strerror or str(e)
            raise BlockRefused(f"the edit journal cannot be read ({reason})") from None
        return handclass.said_unknown(classrule.above_max(sources, self.max_class), sources)


def left_out(
    file_entries: list[str], above: dict[str, str] | None = None, max_class: str = "private"
) -> list[tuple[int, str, str]]:
    """(number from 1, entry, reason) for each entry the block leaves out; above: the entries
    whose class is above max_class (Classes.above), with their class."""
    above = above or {}
    out: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    for number, entry in enumerate(file_entries, start=1):
        reason = check.problem(entry)
        if reason is None and entry in above:
            reason = handclass.left_out_reason(above[entry], max_class)
        if reason is None and entries.canonical(entry) in seen:
            reason = DUPLICATE_REASON
        if reason is None:
            seen.add(entries.canonical(entry))
        else:
            out.append((number, entry, reason))
    return out


def shown_entries(
    name: str,
    file_entries: list[str],
    above: dict[str, str] | None = None,
    max_class: str = "private",
) -> list[str]:
    """The entries that pass the check and are not above max_class, first copies only; the
    others logged (file and number, never the text)."""
    skipped = left_out(file_entries, above, max_class)
    for number, _, reason in skipped:
        log.warning("%s: entry %d left out of the memory block: %s", name, number, reason)
    numbers = {number for number, _, _ in skipped}
    return [e for n, e in enumerate(file_entries, start=1) if n not in numbers]


def _section(home: Home, name: str, file_entries: list[str], classes: Classes) -> str:
    length = entries.length(file_entries)
    above = classes.above(home, name, file_entries)
    body = entries.render(shown_entries(name, file_entries, above, classes.max_class)) or EMPTY
    return f"# {name} ({count(length)} of {count(LIMITS[name])} characters)\n{body}"


def refusal(home: Home) -> str | None:
    """Why build() would refuse every session's block now (a file over its limit, missing or
    unreadable), or None: what an owner's command that lays files whole (a restore) tells the
    owner, since no session would start until it is mended."""
    try:
        soul = trim(_read(home, "soul.md"))
        if len(soul) > LIMITS["soul.md"]:
            return over_limit_reason("soul.md", len(soul))
        for name in ("memory.md", "user.md"):
            length = entries.length(entries.parse(_read(home, name)))
            if length > LIMITS[name]:
                return over_limit_reason(name, length)
    except BlockRefused as e:
        return str(e)
    return None


def build(home: Home, classes: Classes | None = None) -> str:
    """The block text; BlockRefused naming the file when one is over its limit or unreadable.
    classes: [index] max_class and the journal index (default private, the journal walked)."""
    classes = classes or Classes()
    soul = trim(_read(home, "soul.md"))
    if len(soul) > LIMITS["soul.md"]:
        raise BlockRefused(over_limit_reason("soul.md", len(soul)))
    sections = [f"# soul.md\n{soul or EMPTY}"]
    for name in ("memory.md", "user.md"):
        file_entries = entries.parse(_read(home, name))
        length = entries.length(file_entries)
        if length > LIMITS[name]:
            raise BlockRefused(over_limit_reason(name, length))
        sections.append(_section(home, name, file_entries, classes))
    return "\n\n".join(sections)
