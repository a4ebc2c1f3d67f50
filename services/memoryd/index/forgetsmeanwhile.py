"""The words of what was forgotten while a reindex built its new file, merged out once it is in use.

A forget (or a restore, which lays its archive's forgotten.jsonl and notes.md) that runs while a
reindex builds deletes its rows from the index in use and merges that file's full-text term lists
(data/ftsmerge.py). The new file may have read the record or note before that: its catch-up
deletes the rows again (newindex.catch_up re-reads notes.md and drops what forgotten.jsonl keeps
out), but a delete leaves the row's words in FTS5's term lists, and the forget's merge ran on the
other file. So the reindex notes what forgets keep out when its build begins (began); when that
has changed by the catch-up and the catch-up deleted rows, the merge is marked owed before the
swap (owe_if_changed, on the writer), and once the new file is in use it is merged in steps, each
a writer job of its own, before the reindex answers (merge_after). A crash between the swap and
the merge's end leaves the mark, and the next forget merges. A reindex during which nothing was
forgotten merges nothing: the words of rows deleted for other reasons (a note removed) are no
forgotten text.
"""

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from memoryd.data import ftsmerge
from memoryd.errors import MemorydError
from memoryd.home import Home
from memoryd.journal import forgotten

log = logging.getLogger(__name__)


def kept_out(home: Home) -> frozenset[str] | None:
    """What forgets keep out of the index now: the keys forgotten.jsonl lists (or the journal's
    forget lines, when it is damaged) and the digests of the texts they took; None when it
    cannot be read (then any deletion of a catch-up owes the merge)."""
    try:
        return forgotten.listed(home) | forgotten.digests(home)
    except (OSError, ValueError, MemorydError):
        return None


def began(index) -> None:
    """Note, as a build begins, what forgets keep out: the build leaves all of that out itself."""
    index.forgets_seen = kept_out(index.home)
    index.merge_after_swap = False


def owe_if_changed(index, deleted: bool) -> bool:
    """On the writer, after the catch-up of the new file and before its swap: mark the merge owed
    when the catch-up deleted rows and a forget or a restore changed what is kept out since the
    build began (or that is not known); whether it did."""
    seen, index.forgets_seen = index.forgets_seen, None
    if not deleted:
        return False
    now = kept_out(index.home)
    if seen is not None and now is not None and now == seen:
        return False
    ftsmerge.owe(index)
    index.merge_after_swap = True
    log.info(
        "index %s: the new file's catch-up deleted rows of what was forgotten during the build;"
        " their words are merged out of its term lists once it is in use",
        index.path,
    )
    return True


def merge_after(index, on_writer: Callable[..., Any] = ftsmerge.inline) -> str | None:
    """After the swap, when owe_if_changed marked the merge: merge the index in use in steps
    (ftsmerge.merge_owed, each step run by on_writer). None when nothing is left, or why the
    words wait (no room, a step failed: the mark stays for the next forget)."""
    if not index.merge_after_swap:
        return None
    index.merge_after_swap = False
    try:
        # Again, on the writer: a forget's own merge that ran on across the swap settles the mark
        # when it ends, which may be before this merge looks for it.
        on_writer(ftsmerge.owe, index)
        return ftsmerge.merge_owed(index, on_writer)
    except (sqlite3.Error, OSError, MemorydError) as error:
        log.warning(
            "index %s: the words of what was forgotten during the reindex are not merged out"
            " yet: %s; the next forget merges them",
            index.path,
            error,
        )
        return str(error)
