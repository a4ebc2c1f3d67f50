"""The check that the index file is still the one the connections were opened to.

An index file deleted or replaced while memoryd runs would otherwise be answered two ways at once:
the pooled readers go on reading the old file, while a reader opened after it finds the empty file
SQLite makes at the path, so the same question got hits from one and an error from the other.
Recall is refused alike for every caller instead, logged once, until a reindex or a restart.

The writer is held to the same check before it indexes (Connections._write_same): new rows written
into a file no reader will open again would be lost while memoryd said "indexed", and `bxctl
memory stats` says what stands at the path instead of "every session log indexed" (what()).

index/ moved to another disk and linked back keeps the file's device and inode, so the check
looks at the folders below {home} too, never following a link there (belowhome.py): the
connections would otherwise go on reading and writing the file, and its -wal, outside {home}.
"""

import logging
import os
import stat
from pathlib import Path

from memoryd.belowhome import linked_folder
from memoryd.errors import IndexDamaged

# Logged under the index's name, as before this check had a module of its own.
log = logging.getLogger("memoryd.index.index")

GONE = (
    "the memory index index/memory.sqlite3 was removed or replaced while memoryd ran; rebuild it"
    " with bxctl reindex (runbook: memory-index-damaged)"
)
# What what() says of a file memoryd removed itself: a restore's index it could not bring up to
# date (purge.py), which would otherwise recall what the restore took out.
DROPPED = "removed by memoryd after a restore could not bring it up to date"
# What what() says of a folder below {home} that is a link or not a folder: the file may be the
# same, but it is reached through that folder, outside {home} (indexstate.gone_line knows it).
CUT_OFF = "cut off from the home"


class OpenedFile:
    """(device, inode) of the file at path, taken at each connect of the writer (opened); check
    refuses once the path names another file or none, or a folder between root and it is a link
    (or not a folder). root is {home}, index/memory.sqlite3's folder's folder, unless given."""

    def __init__(self, path: Path, root: Path | None = None) -> None:
        self.path = path
        self.root = path.parent.parent if root is None else root
        self._file: tuple[int, int] | None = None
        self._gone_logged = False
        # Why memoryd removed the file itself (a restore could not bring it up to date, a full
        # disk), so that its absence is not said as the owner's removal.
        self.dropped: str | None = None

    def opened(self) -> None:
        """The writer has just connected to the file at path: it is the one to check against."""
        st = os.stat(self.path)
        self._file, self._gone_logged, self.dropped = (st.st_dev, st.st_ino), False, None

    def what(self) -> str | None:
        """None while the path names the file the connections are to (or none was opened yet, or
        the path cannot be looked at: the connect says why); else what stands there now, in a
        few words ("removed", "replaced by a folder"...). Looks, never logs: stats asks too."""
        if self._file is None:
            return None
        if (folder := linked_folder(self.root, self.path)) is not None:
            return f"{CUT_OFF} ({folder})"
        try:
            if (found := os.stat(self.path)) and (found.st_dev, found.st_ino) == self._file:
                return None
            st = os.lstat(self.path)
        except FileNotFoundError:
            return "removed" if self.dropped is None else f"{DROPPED} ({self.dropped})"
        except OSError:  # its folder unreadable, say: the connect says so (_take)
            return None
        if stat.S_ISLNK(st.st_mode):
            return "replaced by a symbolic link"
        if stat.S_ISDIR(st.st_mode):
            return "replaced by a folder"
        if not stat.S_ISREG(st.st_mode):
            return "replaced by something not a regular file"
        return "replaced by another file"

    def check(self) -> None:
        """IndexDamaged (GONE, logged once) when the index file was deleted or replaced while
        open: the pooled connections would go on answering from the old file while a new one
        found an empty file SQLite made at the path, so the same question got hits or an error.
        A folder of it made a link is refused in its own words (cut_off), logged once while it
        stands: put back, the file is the same one, and the connections read on."""
        found = self.what()
        if found is None:
            self._gone_logged = False
            return
        folder = found.startswith(CUT_OFF)
        if found.startswith(DROPPED):
            # purge.py logged it when it removed the file.
            raise IndexDamaged(dropped(found))
        if not self._gone_logged:
            self._gone_logged = True
            log.warning(
                "memory-index-damaged: %s: %s; recall is refused until %s",
                self.path,
                found if folder else "deleted or replaced while memoryd runs",
                "its folder is back in the home"
                if folder
                else "bxctl reindex or a restart rebuilds it",
            )
        raise IndexDamaged(cut_off(found) if folder else GONE)


def dropped(found: str) -> str:
    """The refusal while the index is one memoryd removed itself (what() said DROPPED)."""
    return (
        f"the memory index index/memory.sqlite3 was {found}; rebuild it with bxctl reindex once"
        " there is room (runbook: memory-index-damaged)"
    )


def cut_off(found: str) -> str:
    """The refusal while a folder of the index is a link (what() said CUT_OFF): a reindex
    refuses the link too, so the owner is told to put the folder back (the connections read on
    from it: the same file) or to remove the link, then rebuild."""
    return (
        f"the memory index index/memory.sqlite3 was {found} while memoryd ran: put the folder"
        " back in its place, or remove the link and rebuild it with bxctl reindex (runbook:"
        " memory-index-damaged)"
    )
