"""What memoryd says of a damaged, missing or unreadable forgotten.jsonl: each state once per file,
not at every read of it (recall and the indexer read it per part), and what was written back from
the journal when the writer mended it (forgottenwrite.mend). A file short of the keys of a forget
that stopped part way (memoryd killed between the forget's journal line and its lines there) is
said as that forget, with what to run, never as lines lost: nobody removed or edited the file."""

import logging
import os
from pathlib import Path

from memoryd.data import handkept, matching
from memoryd.data.unfinished import NAME, Unfinished
from memoryd.errors import FileDamaged
from memoryd.journal import forgetlines
from memoryd.journal.journal import IDENTITY_FILES
from memoryd.memory import entries, memfiles
from proto.plural import counted

log = logging.getLogger(__name__)

# What was last said of each file; the home's file and a restore's staged copies, so a few.
_logged: dict[Path, tuple] = {}
FILES_MOST = 4
SAID_MOST = 5


def unreadable(where: Path, error: OSError) -> None:
    if _logged.get(where) != ("unreadable", error.errno):
        _said(where, ("unreadable", error.errno))
        log.error("%s: cannot be read: %s; recall and indexing wait", where, error)


def _said(where: Path, said: tuple) -> None:
    if where not in _logged and len(_logged) >= FILES_MOST:
        _logged.clear()
    _logged[where] = said


def damaged(
    where, damaged: list[int], keyless: tuple, written: int, error, digests: int = 0
) -> None:
    said = tuple(damaged)
    if _logged.get(where) == said and not written and error is None:
        return
    _said(where, said)
    lines = ", ".join(str(n) for n in damaged[:SAID_MOST])
    more = f" and {len(damaged) - SAID_MOST:,} more" if len(damaged) > SAID_MOST else ""
    log.error(
        "%s: line%s %s%s damaged (not a forgotten key); the keys the journal's forget lines "
        "name are kept forgotten as well%s%s",
        where,
        "s" if len(damaged) > 1 else "",
        lines,
        more,
        forgetlines.written_back(written, error, digests),
        forgetlines.keyless(keyless, missing=False),
    )


def lacking(where: Path, lacking: int, written: int, error, digests: int = 0) -> None:
    said = ("lacking", lacking)
    if _logged.get(where) == said and not written and error is None:
        return
    _said(where, said)
    log.error(
        "%s lacks %s that the journal's forget lines name (lines lost: the file emptied or "
        "edited); they are kept forgotten as well%s",
        where,
        counted(lacking, "key or digest", "keys or digests"),
        forgetlines.written_back(written, error, digests),
    )


def missing(
    where: Path, journal: forgetlines.Forgets, written: int, error, digests: int = 0
) -> None:
    said = ("missing", written, error)
    if _logged.get(where) == said and not written:
        return
    _said(where, said)
    named = journal.keys or journal.texts
    kept = "; the keys the journal's forget lines name are kept forgotten" if named else ""
    if named:
        kept += forgetlines.written_back(written, error, digests)
    if named and journal.keys <= journal.last and journal.texts <= journal.newest():
        # The journal's forget lines are one forget's (a line per file it edited), which makes
        # the file last of all: not a file lost, but one that forget had not made yet (or
        # removed since it did).
        log.warning(
            "%s is missing: the journal's forget lines are of one forget, which makes it only "
            "once it has taken the text out of the journal and the exports, so that forget "
            "stopped before then (or the file was removed since); the keys and digests it names "
            "are kept forgotten%s%s",
            where,
            forgetlines.written_back(written, error, digests),
            forgetlines.keyless(journal.keyless, missing=True),
        )
        return
    log.error("%s is missing%s%s", where, kept, forgetlines.keyless(journal.keyless, missing=True))


def part_way(
    where: Path,
    stopped: Unfinished,
    lacking: int,
    written: int,
    error,
    digests: int = 0,
    rebuilt: bool = False,
) -> None:
    """At start: the forget that stopped part way, what of it this file did not list yet (written
    back), every place its text may still be (places), and the forget to run again (as bxctl
    memory stats says it). Its text is never said: a forget given the text's words is named by
    them only in stats, on the owner's terminal. rebuilt: its record had been removed, and was
    made again from what still holds the text."""
    listed = (
        f" (its record {where.parent / NAME} had been removed: made again from "
        "the journal's older lines or an export, which still hold its text)"
        if rebuilt
        else ""
    )
    if lacking:
        unlisted = counted(lacking, "key or digest", "keys or digests")
        listed += (
            f"; its journal line was written, {unlisted} of it not yet listed in {where}"
            f"{forgetlines.written_back(written, error, digests)}"
        )
    again = (
        f"bxctl memory forget {stopped.ref}"
        if stopped.ref == stopped.id
        else "the same bxctl memory forget (bxctl memory stats names it)"
    )
    log.warning(
        "a forget of %s stopped part way%s; its text may still be in %s: run %s again to finish it",
        stopped.what,
        listed,
        places(where.parent, stopped),
        again,
    )


def places(memory: Path, stopped: Unfinished) -> str:
    """Every place the stopped forget's text may still be. Recall hides it already, so this line
    is all that tells the owner a memory file still holds it: the files come first, as the forget
    rewrites them first, then what its scrub reaches after them."""
    places = [*_files(memory, stopped), "the journal", "the recall log", "a pending write"]
    if _kept(memory):
        places.append("a kept hand edit")
    return ", ".join(places) + " or an export"


def _files(memory: Path, stopped: Unfinished) -> list[str]:
    """The memory files the record names (an entry's file by the id or what it was given, notes.md
    by a note's key, which it lists for every note holding the text), and memory.md or user.md
    when it holds the text now: a session record's or a bare text's record names no entry, though
    the entries it matched are rewritten too."""
    files = [
        name
        for name in IDENTITY_FILES
        if _entry_of(stopped, name) or _holds(memory / name, name, stopped.texts)
    ]
    if any(n.startswith("note:") for n in (stopped.id, *stopped.keys)):
        files.append("notes.md")
    return files


def _entry_of(stopped: Unfinished, name: str) -> bool:
    return stopped.id.startswith(f"{name}:") or stopped.what == f"an entry of {name}"


def _holds(path: Path, name: str, texts: list[str]) -> bool:
    """Whether the file's entries hold one of texts; a file that cannot be read is said where it
    is read, and holds none that this line could name."""
    try:
        held = entries.parse(memfiles.read_text(path, name))
    except (FileDamaged, OSError):
        return False
    return any(matching.same(e, t) for e in held for t in texts)


def _kept(memory: Path) -> bool:
    """Whether a save of the owner's is kept beside memory.md, user.md or notes.md
    (data/handkept.py), which the forget scrubs last."""
    try:
        return any(handkept.KEPT.match(name) for name in os.listdir(memory))
    except OSError:
        return False
