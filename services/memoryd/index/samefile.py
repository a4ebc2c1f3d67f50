"""The check that the index file is still the one the connections were opened to.

An index file deleted or replaced while memoryd runs would otherwise be answered two ways at once:
the pooled readers go on reading the old file, while a reader opened after it finds the empty file
SQLite makes at the path, so the same question got hits from one and an error from the other.
Recall is refused alike for every caller instead, logged once, until a reindex or a restart.

The writer is held to the same check before it indexes (Connections._write_same): new rows written
into a file no reader will open again would be lost while memoryd said "indexed", and `bxctl
memory stats` says what stands at the path instead of "every session log indexed" (what()).
"""

import logging
import os
import stat
from pathlib import Path

from memoryd.errors import IndexDamaged

# Logged under the index's name, as before this check had a module of its own.
log = logging.getLogger("memoryd.index.index")

GONE = (
    "the memory index index/memory.sqlite3 was removed or replaced while memoryd ran; rebuild it"
    " with bxctl reindex (runbook: memory-index-damaged)"
)


class OpenedFile:
    """(device, inode) of the file at path, taken at each connect of the writer (opened); check
    refuses once the path names another file or none."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: tuple[int, int] | None = None
        self._gone_logged = False

    def opened(self) -> None:
        """The writer has just connected to the file at path: it is the one to check against."""
        st = os.stat(self.path)
        self._file, self._gone_logged = (st.st_dev, st.st_ino), False

    def what(self) -> str | None:
        """None while the path names the file the connections are to (or none was opened yet, or
        the path cannot be looked at: the connect says why); else what stands there now, in a
        few words ("removed", "replaced by a folder"...). Looks, never logs: stats asks too."""
        if self._file is None:
            return None
        try:
            if (found := os.stat(self.path)) and (found.st_dev, found.st_ino) == self._file:
                return None
            st = os.lstat(self.path)
        except FileNotFoundError:
            return "removed"
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
        found an empty file SQLite made at the path, so the same question got hits or an error."""
        found = self.what()
        if found is None:
            return
        if not self._gone_logged:
            self._gone_logged = True
            log.warning(
                "memory-index-damaged: %s: deleted or replaced while memoryd runs; recall is"
                " refused until bxctl reindex or a restart rebuilds it",
                self.path,
            )
        raise IndexDamaged(GONE)
