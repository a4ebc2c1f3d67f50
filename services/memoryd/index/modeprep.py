"""The configured recall mode's tables in the index, and what the mode runs beside it (live).

An index made for another mode has its mode tables rebuilt from the spec's: seconds at a few
hundred thousand records; so has a table of its own mode that a format step marked stale
(formatstep.py), the mode's other tables kept. At a start that is deferred (open(defer_mode) in
index.py) to the catch-up once memoryd listens, so that memoryd serves meanwhile and recall
answers by the spec's search over the rows there, saying so in a line (and how many rows are
built). A changed mode is built there a part at a time (prepare_mode_part, modes.prepare_part),
each part a writer job of its own, so that a memory call waits at most for one part; its tables
serve recall only once the last part is done. A stop interrupts the part under way (rolled back)
and keeps the parts made, as a kill does: the next start goes on from them. A build that found
no room (a full disk, or another error of the disk or of access, dbfile.unwritable) is rolled
back too and tried again by the catch-up until it succeeds (mode_waiting), recall answering by
the spec's search meanwhile and saying why; a build that failed otherwise leaves the index
damaged for recall until a reindex builds a file for the mode. prepare_mode builds, or finishes,
in one go, for what cannot wait (an open that is not deferred, a reindex's swap). A switch to spec
is deferred too, its old tables dropped a part at a time (modeclear.py, mode_clearing): its
recall, the spec's, is whole meanwhile, and says nothing.
"""

import logging
import sqlite3
from pathlib import Path

from memoryd import modes
from memoryd.errors import IndexDamaged
from memoryd.index import carryfile, modeclear
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
        # While built a part at a time: (rows built, about how many in all), for the line recall
        # and stats give meanwhile.
        self._built: tuple[int, int] | None = None
        # While a switch to spec drops the old mode's tables a part at a time (modes.drop_part):
        # what the index was (for the lines), the spec's Live serving recall whole meanwhile.
        self._clearing: str | None = None
        self._parts_made = 0

    def defer_mode(self) -> None:
        """open(defer_mode): leave the mode's tables, which must be built, to prepare_mode,
        saying so in one line."""
        conn = self._write()
        if not self.recall_mode.objects:
            modeclear.defer(self, conn)
            return
        self._renewing = modes.renewing(conn, self.mode)
        self._built = modes.built_so_far(conn) if modes.recorded(conn) == self.mode else None
        self._mode_state = "pending"
        if self._built is not None:
            log.info(
                "index %s: recall mode %s: its tables, %s of about %s rows built before a stop,"
                " are built on once memoryd listens; recall answers by the spec's search meanwhile",
                self.path,
                self.mode,
                f"{self._built[0]:,}",
                f"{self._built[1]:,}",
            )
        elif self._renewing is None:
            log.info(
                "index %s: recall mode %s: its tables are built a part at a time once memoryd"
                " listens; recall answers by the spec's search meanwhile",
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
        mode (or the rest of a build begun a part at a time), then what the mode runs beside the
        index (on the writer). A deferred build that found no room is logged once and left
        "waiting" for the catch-up to call this again; any other failure is logged and recall
        refused (DAMAGED) until a reindex builds a file for the mode."""
        with self._pool_lock:
            if self._mode_state == "stopped":
                return
            deferred = self._mode_state is not None
            waited = self._mode_state == "waiting"
            self._mode_state = "preparing" if deferred else None
        self._prepare_whole(deferred, waited)

    def _prepare_whole(self, deferred: bool, waited: bool) -> None:
        """prepare_mode's build in one transaction, then the mode's Live; deferred: a failure is
        logged (once, waited: a retry of a build that found no room) rather than raised."""
        try:
            done = self._in_one_transaction(
                lambda conn: modes.prepare(conn, self.mode, self.path, self._fresh_file), deferred
            )
            modes.built(done)
            self._fresh_file = False
            self._built = None
            self._clearing = None
            if self.mode == "hybrid":
                # Only now: the build above drops its tables by name, which SQLite would look
                # for in an attached file too when the index has none yet.
                carryfile.attach(self._write(), self.path)
        except (sqlite3.Error, IndexDamaged) as error:
            if not deferred:
                raise
            self._not_built(error, waited)
            return
        self._open_live()

    def prepare_mode_part(self) -> bool:
        """A deferred prepare_mode a part at a time (modes.prepare_part), each part a writer job
        of its own, so that memory calls run between the parts: False while parts are left (call
        again; recall answers by the spec's search meanwhile, saying how far), True once
        prepare_mode has made the last (or it is left waiting, failed or stopped). A build that
        is not deferred, and a renewal of some tables, are prepare_mode's in one go."""
        if self._clearing is not None:
            return modeclear.part(self)
        with self._pool_lock:
            state = self._mode_state
            if state == "stopped":
                return True
            parts = state is not None and self._renewing is None
            if parts:
                self._mode_state = "preparing"
        if not parts:
            self.prepare_mode()
            return True
        try:
            made = self._in_one_transaction(
                lambda conn: modes.prepare_part(conn, self.mode, self._fresh_file), True
            )
        except (sqlite3.Error, IndexDamaged) as error:
            self._not_built(error, state == "waiting")
            return True
        with self._pool_lock:
            if made is not None:
                self._built = made
            stopped = self._mode_state == "stopped"
            if not stopped:
                self._mode_state = "pending" if made is not None else "preparing"
        if made is None and not stopped:  # what is left is one part: prepare_mode's
            self._prepare_whole(True, state == "waiting")
        elif stopped and (kept := self._kept()):  # the stop came once the part was made
            log.info("index %s: recall mode %s: memoryd stopping%s", self.path, self.mode, kept)
        return made is None or stopped

    def _in_one_transaction(self, build, watched: bool):
        """build(conn) in one transaction of the writer; watched (a deferred build): a stop ends
        it at its next statement (stop_preparing), rolled back."""
        writer = self._write()
        # interrupt() reaches only a statement already running: a stop that falls between two of
        # the build's statements is seen by this handler at the next one.
        if watched:
            writer.set_progress_handler(self._stopping, 10_000)
        try:
            with self._transaction(writer) as conn:
                return build(conn)
        finally:
            if watched:
                writer.set_progress_handler(None, 0)

    def _not_built(self, error: Exception, waited: bool) -> None:
        """A deferred build (or part) that failed, rolled back: stopped, waiting for room (said
        once), or failed (recall refused until a reindex)."""
        wrong = unwritable(error, self.path)
        with self._pool_lock:
            stopped = self._mode_state == "stopped"
            self._mode_state = "stopped" if stopped else "waiting" if wrong else "failed"
            if wrong:
                self._waiting = wrong
        if stopped:
            log.info(
                "index %s: recall mode %s: not built, memoryd stopping%s",
                self.path,
                self.mode,
                self._kept(),
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

    def _kept(self) -> str:
        """What a stop keeps of a build made a part at a time, in words ("" for none)."""
        if (built := self._built) is None or not built[0]:
            return ""
        return f"; the next start goes on from the {built[0]:,} of about {built[1]:,} rows built"

    def _open_live(self) -> None:
        """What the mode runs beside the index, once its tables are whole."""
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
        """Whether prepare_mode has still to build the mode's tables (open(defer_mode)); not a
        switch to spec dropping the old mode's tables (mode_clearing): its recall is whole."""
        return self._mode_state is not None and self._clearing is None

    @property
    def mode_build(self) -> dict[str, int] | None:
        """How far a changed mode's build a part at a time is, for `stats --json`: the rows built
        and about how many in all (those held when it began); None when none is under way, before
        its first part, or for one made in one go (a format step's renewal of some tables)."""
        built = self._built
        if built is None or not self.mode_pending or self._renewing is not None:
            return None
        return {"built": built[0], "of": built[1]}

    @property
    def mode_clearing(self) -> bool:
        """Whether a switch to spec has still old tables to drop, a part at a time
        (prepare_mode_part, on the writer once memoryd listens)."""
        return self._mode_state is not None and self._clearing is not None

    @property
    def mode_waiting(self) -> bool:
        """Whether the mode's build found no room and is to be tried again (prepare_mode)."""
        return self._mode_state == "waiting"

    def stop_preparing(self) -> None:
        """memoryd is stopping: a deferred prepare_mode (or its part under way) is interrupted
        (rolled back, the parts made before kept) or not started."""
        with self._pool_lock:
            if self._mode_state == "preparing" and self._writer is not None:
                self._writer.interrupt()
            between = self._mode_state == "pending" and self._built is not None
            if self._mode_state in ("pending", "preparing", "waiting"):
                self._mode_state = "stopped"
        if between and (kept := self._kept()):
            log.info("index %s: recall mode %s: memoryd stopping%s", self.path, self.mode, kept)

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
    def building(self) -> str | None:
        """The configured mode while recall answers by the spec's search in its stead (live):
        its tables being built, or waiting for room; None when it answers itself (or is spec)."""
        if self._live is not None or self._mode_state not in MEANWHILE_STATES:
            return None
        return self.mode if self.recall_mode.objects else None

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
        said = (
            f"(recall mode {self.mode} is being prepared, changed since memoryd last ran: these "
            "hits are the spec's search meanwhile"
        )
        if (built := self._built) is not None:
            said += f"; {built[0]:,} of about {built[1]:,} rows built"
        return said + ")"

    def drain_embeddings(self, timeout: float = 60.0) -> bool:
        """Wait until the recall mode's background work is done (hybrid: every row has its
        vector; tests and benchmarks)."""
        return self._live is None or self._live.drain(timeout)
