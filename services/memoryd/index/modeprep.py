"""The configured recall mode's tables in the index, and what the mode runs beside it (live).

An index made for another mode has its mode tables rebuilt from the spec's: seconds at a few
hundred thousand records; so has a table of its own mode that a format step marked stale
(formatstep.py), the mode's other tables kept. At a start that is deferred (open(defer_mode) in
index.py) to prepare_mode, on the writer once memoryd listens, so that memoryd serves meanwhile
and recall answers by the spec's search over the rows there, saying so in a line; a stop
interrupts that build (rolled back, the index as it was). A build that found no room (a full
disk, or another error of the disk or of access, dbfile.unwritable) is rolled back too and tried
again by the catch-up until it succeeds (mode_waiting), recall answering by the spec's search
meanwhile and saying why; a build that failed otherwise leaves the index damaged for recall
until a reindex builds a file for the mode.
"""

import logging
import sqlite3
from pathlib import Path

from memoryd import modes
from memoryd.errors import IndexDamaged
from memoryd.index import carryfile
from memoryd.index.connections import Connections
from memoryd.index.dbfile import DAMAGED, unwritable
from memoryd.modes import registry

# Logged under the index's name, as before the mode's preparation had a module of its own.
log = logging.getLogger("memoryd.index.index")


# The states in which the mode's tables are not there yet but will be, the spec's rows whole.
MEANWHILE_STATES = ("pending", "preparing", "opening", "waiting")


class ModePrep(Connections):
    def __init__(self, path: Path, mode: str) -> None:
        self.recall_mode = registry.get(mode)  # ValueError for a name no mode has
        self.mode = mode
        super().__init__(path)
        self._live: registry.Live | None = None  # what the recall mode runs while open
        # The mode's tables, when open(defer_mode) left them to prepare_mode: "pending" until
        # built, "preparing" while built, "opening" while its Live starts, "waiting" when the
        # build found no room (tried again), "failed" when it failed otherwise; None once ready.
        self._mode_state: str | None = None
        self._waiting: tuple[str, str] = ("", "")  # while "waiting": what is wrong, and when mended
        # The file was made by this open (Index.open): its spec tables were never another mode's.
        self._fresh_file = False
        # While deferred: the mode's tables built again from the rows, the others kept, and why
        # (a format step marked them: modes.renewing); None when the mode is built whole.
        self._renewing: str | None = None

    def defer_mode(self) -> None:
        """open(defer_mode): leave the mode's tables, which must be built, to prepare_mode,
        saying so in one line."""
        self._renewing = modes.renewing(self._write(), self.mode)
        self._mode_state = "pending"
        if self._renewing is None:
            log.info(
                "index %s: recall mode %s: its tables are built once memoryd listens;"
                " recall waits for them",
                self.path,
                self.mode,
            )
        else:
            log.info(
                "index %s: recall mode %s: %s: built again from the index's rows once memoryd"
                " listens; recall answers by the spec's search meanwhile",
                self.path,
                self.mode,
                self._renewing,
            )

    def prepare_mode(self) -> None:
        """The configured mode's tables, built from the spec's if the index was made for another
        mode, then what the mode runs beside the index (on the writer). A deferred build that
        found no room is logged once and left "waiting" for the catch-up to call this again; any
        other failure is logged and recall refused (DAMAGED) until a reindex builds a file for
        the mode."""
        with self._pool_lock:
            if self._mode_state == "stopped":
                return
            deferred = self._mode_state is not None
            waited = self._mode_state == "waiting"
            self._mode_state = "preparing" if deferred else None
        try:
            writer = self._write()
            # interrupt() reaches only a statement already running: a stop that falls between
            # two of the build's statements is seen by this handler at the next one.
            if deferred:
                writer.set_progress_handler(self._stopping, 10_000)
            try:
                with self._transaction(writer) as conn:
                    done = modes.prepare(conn, self.mode, self.path, self._fresh_file)
                modes.built(done)
                self._fresh_file = False
            finally:
                if deferred:
                    writer.set_progress_handler(None, 0)
            if self.mode == "hybrid":
                # Only now: the build above drops its tables by name, which SQLite would look
                # for in an attached file too when the index has none yet.
                carryfile.attach(writer, self.path)
        except (sqlite3.Error, IndexDamaged) as error:
            if not deferred:
                raise
            wrong = unwritable(error, self.path)
            with self._pool_lock:
                stopped = self._mode_state == "stopped"
                self._mode_state = "stopped" if stopped else "waiting" if wrong else "failed"
                if wrong:
                    self._waiting = wrong
            if stopped:
                log.info(
                    "index %s: recall mode %s: not built, memoryd stopping", self.path, self.mode
                )
            elif wrong:
                if not waited:  # said once; the catch-up tries again until it is built
                    log.error(
                        "index %s: recall mode %s: not built: %s; tried again %s",
                        self.path,
                        self.mode,
                        wrong[0],
                        wrong[1],
                    )
            else:
                log.error("index %s: recall mode %s: not built: %s", self.path, self.mode, error)
            return
        if self._live is None:
            # Recall is refused as "being prepared" until the mode's Live runs (hybrid starts its
            # embedding child here, about a second), not as an index that is not open.
            with self._pool_lock:
                self._mode_state = "opening"
            try:
                self._live = self.recall_mode.open(self._embedding_connection, self.path)
            finally:
                with self._pool_lock:
                    self._mode_state = None
        else:
            with self._pool_lock:
                self._mode_state = None

    def _stopping(self) -> int:
        """Non-zero (SQLite then ends the statement) once stop_preparing has been called."""
        return 1 if self._mode_state == "stopped" else 0

    @property
    def mode_pending(self) -> bool:
        """Whether prepare_mode has still to build the mode's tables (open(defer_mode))."""
        return self._mode_state is not None

    @property
    def mode_waiting(self) -> bool:
        """Whether the mode's build found no room and is to be tried again (prepare_mode)."""
        return self._mode_state == "waiting"

    def stop_preparing(self) -> None:
        """memoryd is stopping: a deferred prepare_mode is interrupted (rolled back, the index as
        it was) or not started."""
        with self._pool_lock:
            if self._mode_state == "preparing" and self._writer is not None:
                self._writer.interrupt()
            if self._mode_state in ("pending", "preparing", "waiting"):
                self._mode_state = "stopped"

    @property
    def live(self) -> registry.Live:
        """The recall mode's state beside the open index, which recall searches. While the mode's
        tables are being built, or wait for room, the spec's search answers from the rows that
        are there (they are whole; only the mode's own tables are missing): see meanwhile."""
        if self._live is None:
            if self._mode_state == "failed":
                raise IndexDamaged(DAMAGED)
            if self._mode_state in MEANWHILE_STATES:
                return registry.Stateless(registry.get("spec"))
            raise IndexDamaged("the memory index is not open")
        return self._live

    @property
    def meanwhile(self) -> str | None:
        """The line a recall answered by the spec's search (live) carries, saying why."""
        if self._live is not None or self._mode_state not in MEANWHILE_STATES:
            return None
        if self._mode_state == "waiting":
            what, when = self._waiting
            return (
                f"(recall mode {self.mode} cannot be prepared now: {what}; these hits are the "
                f"spec's search meanwhile, and {self.mode} answers {when})"
            )
        if self._renewing is not None:
            return (
                f"(recall mode {self.mode} is being prepared: its {self._renewing} is built again"
                " from the index's rows: these hits are the spec's search meanwhile)"
            )
        return (
            f"(recall mode {self.mode} is being prepared, changed since memoryd last ran: these "
            "hits are the spec's search meanwhile)"
        )

    def drain_embeddings(self, timeout: float = 60.0) -> bool:
        """Wait until the recall mode's background work is done (hybrid: every row has its
        vector; tests and benchmarks)."""
        return self._live is None or self._live.drain(timeout)
