"""The check that the index file is still the one the connections were opened to.

An index file deleted or replaced while memoryd runs would otherwise be answered two ways at once:
the pooled readers go on reading the old file, while a reader opened after it finds the empty file
SQLite makes at the path, so the same question got hits from one and an error from the other.
Recall is refused alike for every caller instead, logged once, until a reindex or a restart.
"""

import logging
import os
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

    def check(self) -> None:
        """IndexDamaged (GONE, logged once) when the index file was deleted or replaced while
        open: the pooled connections would go on answering from the old file while a new one
        found an empty file SQLite made at the path, so the same question got hits or an error."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            found = None
        except OSError:  # its folder unreadable, say: the connect says so (_take)
            return
        else:
            found = (st.st_dev, st.st_ino)
        if self._file is None or found == self._file:
            return
        if not self._gone_logged:
            self._gone_logged = True
            log.warning(
                "memory-index-damaged: %s: deleted or replaced while memoryd runs; recall is"
                " refused until bxctl reindex or a restart rebuilds it",
                self.path,
            )
        raise IndexDamaged(GONE)
