"""The owner's data commands kept from running across one another where that made them lie.

forget, import and restore change memory from what they read before they write: an import that
parsed its file before a forget wrote the forgotten text back in its next batch, and a forget
counted the exports and backups there were when it ran, not one being written meanwhile, which
then held the text. So forget, import and restore each run alone; backups and exports, which only
copy, may run beside one another (one backup at a time) but not beside those three. A command that
cannot start is refused at once in one line naming what runs, never queued: the owner runs it
again after. Reads that change nothing (a forget's preview, an import's dry run) take no turn.
"""

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator

from memoryd.errors import AdminRefused

ALONE = ("forget", "import", "restore")


class DataTurns:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._alone: str | None = None
        self._copying: Counter[str] = Counter()  # backup, export: how many of each run

    def _running(self) -> str | None:
        if self._alone is not None:
            return _a(self._alone)
        names = sorted(self._copying)
        return " and ".join(_a(n) for n in names) if names else None

    @contextlib.contextmanager
    def turn(self, command: str) -> Iterator[None]:
        """Run command's body in its turn, or AdminRefused when it cannot start now."""
        with self._lock:
            running = self._running()
            if command in ALONE:
                blocked = running
            elif self._alone is not None or (command == "backup" and self._copying["backup"]):
                blocked = running
            else:
                blocked = None
            if blocked is not None:
                raise AdminRefused(
                    f"refused: {blocked} is running, and {command} waits for it to end; "
                    "nothing was done: run it again after it"
                )
            if command in ALONE:
                self._alone = command
            else:
                self._copying[command] += 1
        try:
            yield
        finally:
            with self._lock:
                if command in ALONE:
                    self._alone = None
                else:
                    self._copying[command] -= 1
                    if not self._copying[command]:
                        del self._copying[command]


def _a(command: str) -> str:
    return f"an {command}" if command[0] in "aeiou" else f"a {command}"


TURNS = DataTurns()
