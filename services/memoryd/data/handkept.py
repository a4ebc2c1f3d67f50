"""The owner's saves memoryd kept beside memory.md and user.md (FILE.hand-edit-<time>), in
forget's reach.

A save that landed while memoryd swapped its own write in, or one a kill left under memoryd's
temporary name, is kept as memory.md.hand-edit-<time> for the owner to merge (memory/memfiles.py,
memory/handedit.py): memoryd wrote it there, so a forget takes the text out of it as out of the
file itself: each entry that is the text exactly goes (the file is rewritten whole, and removed
when nothing is left). A file that cannot be read or parsed is left as it is, logged.
"""

import logging
import re
from pathlib import Path

from memoryd.data import matching
from memoryd.errors import FileDamaged
from memoryd.home import Home, atomic_write
from memoryd.memory import entries
from memoryd.memory.memfiles import read_text
from proto.plural import counted

log = logging.getLogger(__name__)

KEPT = re.compile(r"\A(?:memory|user)\.md\.hand-edit-[0-9A-Za-z-]+\Z")


def kept_files(home: Home) -> list[Path]:
    try:
        return sorted(p for p in home.memory.iterdir() if KEPT.match(p.name) and p.is_file())
    except OSError:
        return []


def _entries(path: Path) -> list[str] | None:
    try:
        return entries.parse(read_text(path, path.name))
    except FileDamaged as e:
        log.warning("%s: not searched for the text forgotten: %s", path, e)
        return None


def holding(home: Home, texts: list[str]) -> int:
    """How many kept saves hold one of texts as an entry."""
    count = 0
    for path in kept_files(home):
        held = _entries(path) or []
        count += any(matching.same(e, t) for e in held for t in texts)
    return count


def scrub(home: Home, text: str) -> None:
    """text's entries taken out of every kept save that holds it."""
    for path in kept_files(home):
        held = _entries(path)
        if held is None or not any(matching.same(e, text) for e in held):
            continue
        left = [e for e in held if not matching.same(e, text)]
        if left:
            atomic_write(path, entries.file_bytes(left))
        else:
            path.unlink()
        log.info(
            "%s: the forgotten text taken out (%s left)",
            path,
            counted(len(left), "entry", "entries"),
        )
