"""A file memoryd writes in place that has another hard link, given a copy of its own at start.

A home copied with cp -al or rsync -H, or a file linked in by hand, leaves memoryd's appended
files (notes.md, the journal's months, ...) sharing their bytes with a file at another name,
perhaps outside {home}: every append would land there too. Refusing to start would leave the
owner with a stack that does not come up for what memoryd can mend itself, so the start copies
such a file to a new file beside it and renames that over it (atomic_write, fsync'd): the other
name keeps the bytes it had, memoryd's name holds the same bytes in a file of its own, and one
line says so; so is the index's lock file, flock'd and never written, which would otherwise stay
shared with the home it was copied from. Only after the start check has found every folder and
file what it should be (no link followed, nothing written outside {home}). A file that cannot be
copied (a full disk) is left for that check, which then refuses the start in one line naming it.
A link made while memoryd runs is refused at each append instead (proto.files, own).
"""

import logging
import os
import stat
from collections.abc import Iterator

from memoryd.home import Home, atomic_write, open_read, own_links, written_in_place

log = logging.getLogger("memoryd")

BLOCK = 1 << 20
# The index's lock (server.take_index_lock) is never written, but flock'd: one shared with the
# home it was copied from would refuse this start while that home's memoryd runs, saying another
# runs here. The home folder's lock, taken first, keeps two memoryd off this home meanwhile.
LOCK = "memoryd.lock"


def give_own_copies(home: Home) -> None:
    """Each file memoryd writes in place that has a hard link besides its own leftovers copied
    into a file of its own (the module docstring); called with the home locked, before memoryd
    opens any of them."""
    for path, folder in home.owned_entries():
        if folder or not (written_in_place(home, path) or path == home.index_dir / LOCK):
            continue
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_nlink <= 1 + len(own_links(path, st)):
            continue
        try:
            with open_read(path) as f:
                atomic_write(path, _blocks(f))
        except OSError as e:
            log.error(
                "%s: has %d hard links and cannot be given a copy of its own: %s",
                path,
                st.st_nlink,
                e.strerror or e,
            )
            continue
        log.warning(
            "%s: had %d hard links (a copy made with cp -al, or a link by hand), so memoryd's "
            "writes would have changed the file at its other name too; it now has a copy of its "
            "own, and the other name keeps the bytes it had",
            path,
            st.st_nlink,
        )


def _blocks(f) -> Iterator[bytes]:
    while block := f.read(BLOCK):
        yield block
