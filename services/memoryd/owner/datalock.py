"""The owner's data commands kept from running across one another where that made them lie, and
from taking the readers that memory_block and recall wait for.

forget, import and restore change memory from what they read before they write: an import that
parsed its file before a forget wrote the forgotten text back in its next batch, and a forget
counted the exports and backups there were when it ran, not one being written meanwhile, which
then held the text. So forget, import and restore each run alone; backups and exports, which only
copy, may run beside one another (one backup at a time) but not beside those three. Reads that
change nothing (a forget's preview, an import's dry run) may run beside any of them.

Each of these commands reads for long (seconds to minutes, on a large home or file) on one of
memoryd's reader threads (service.py), the threads that loopd's memory_block and every recall
wait for: so at most SHARE of them run at once, whatever they are, previews and dry runs
included, and the other readers are always there for a session starting or a recall.

A command that cannot start is refused at once in one line naming what runs, never queued: the
owner runs it again after.
"""

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TypeVar

from memoryd.data import unfinished
from memoryd.errors import AdminRefused

ALONE = ("forget", "import", "restore")
SHARE = 2  # of memoryd's 4 readers (service.py): the others stay for memory_block and recall
READ_ONLY = {"forget": "forget preview", "import": "import dry run"}  # what a dry run is called

T = TypeVar("T")


class DataTurns:
    def __init__(self, share: int = SHARE) -> None:
        self._lock = threading.Lock()
        self._share = share
        self._alone: str | None = None
        self._copying: Counter[str] = Counter()  # backup, export: how many of each run
        self._reading: Counter[str] = Counter()  # previews and dry runs: how many of each run

    def _changing(self) -> str | None:
        if self._alone is not None:
            return _a(self._alone)
        return _listed(self._copying)

    def _count(self) -> int:
        return (self._alone is not None) + self._copying.total() + self._reading.total()

    def _refusal(self, command: str, changes: bool) -> str | None:
        """Why command cannot start now, in one line, or None (under self._lock)."""
        changing = self._changing()
        if changes and changing is not None:
            if (
                command in ALONE
                or self._alone is not None
                or (command == "backup" and self._copying["backup"])
            ):
                one = self._alone is not None or self._copying.total() == 1
                verb, them = ("is", "it") if one else ("are", "them")
                return (
                    f"refused: {changing} {verb} running, and {command} waits for {them} to end; "
                    f"nothing was done: run it again after {them}"
                )
        if self._count() >= self._share:
            running = Counter([self._alone] if self._alone else []) + self._copying
            running += self._reading
            verb = "is" if running.total() == 1 else "are"
            label = command if changes else READ_ONLY.get(command, command)
            return (
                f"refused: {_listed(running)} {verb} running, and at most {self._share} of the "
                "owner's data commands run at once, so that sessions and recall find memoryd "
                f"free; the {label} was not started: run it again when one has ended"
            )
        return None

    @contextlib.contextmanager
    def turn(self, command: str, changes: bool = True) -> Iterator[None]:
        """Run command's body in its turn, or AdminRefused when it cannot start now. changes is
        False for a preview or a dry run, which only counts among the commands running."""
        with self._lock:
            refusal = self._refusal(command, changes)
            if refusal is not None:
                raise AdminRefused(refusal)
            if not changes:
                self._reading[READ_ONLY.get(command, command)] += 1
            elif command in ALONE:
                self._alone = command
            else:
                self._copying[command] += 1
        try:
            yield
        finally:
            with self._lock:
                if not changes:
                    _less(self._reading, READ_ONLY.get(command, command))
                elif command in ALONE:
                    self._alone = None
                else:
                    _less(self._copying, command)

    def unless_running(self, command: str, look: Callable[[], T]) -> T | None:
        """look() while command (one of ALONE) does not hold its turn, None while it does. Looked
        under the lock a turn is taken by, so that command cannot begin meanwhile: what it
        leaves behind when it stops part way (a forget's record, data/unfinished.py) is the
        same file it writes while it runs, and only one that no run holds is a stop."""
        with self._lock:
            if self._alone == command:
                return None
            return look()


def _less(counter: Counter[str], name: str) -> None:
    counter[name] -= 1
    if not counter[name]:
        del counter[name]


def _listed(counter: Counter[str]) -> str | None:
    """'an export and 2 import dry runs', or None when nothing runs."""
    said = [_a(name) if n == 1 else f"{n} {name}s" for name, n in counter.items()]
    return " and ".join(said) if said else None


def _a(command: str) -> str:
    return f"an {command}" if command[0] in "aeiou" else f"a {command}"


TURNS = DataTurns()


def stopped_forget(home) -> unfinished.Unfinished | None:
    """The forget that stopped part way (its record stands, data/unfinished.py), or None: none
    stopped, or a forget runs now, whose record that is (or the stopped one it is finishing).
    AdminRefused when the record cannot be read."""
    return TURNS.unless_running("forget", lambda: unfinished.read(home))


def refuse_while_forget_stopped(home, nothing: str) -> None:
    """AdminRefused in one line while a forget that stopped part way stands: the text it takes
    is gone from some files but not yet from the journal's older lines, pending writes or the
    exports, nor listed as forgotten, so a restore, an import, or an owner's write that takes a
    text from those (an undo of an edit whose line still holds it, a promote, an accept, an
    edit) could bring it back unseen. nothing: what the answer says was not done ("undone")."""
    stopped = stopped_forget(home)
    if stopped is not None:
        raise AdminRefused(
            f"refused: a forget of {stopped.what} stopped part way; nothing was {nothing}: run"
            f" bxctl memory forget {stopped.ref!r} again to finish it first"
        )
