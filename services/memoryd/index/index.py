"""The index file {home}/index/memory.sqlite3 (spec 6): opening it, catching it up, reindexing.

One writer thread calls catch_up_* and reindex, which are serialised on the writer's connection;
recall runs on any other thread, each call on a read connection taken from a small pool
(connections.py). Recall itself lives in recall.py: the index only hands out read connections
(reader), under the swap gate, a damaged file reported as IndexDamaged, and refuses alike once
the file was deleted or replaced while open (samefile.py).

Catching up goes a part at a time (indexer.index_session_part, sessioncatchup.py; notes.md:
notescatchup.py), each part its own transaction, so the writer thread can run a memory call between
two parts; a transaction that changed nothing is rolled back, not committed. While the catch-up
after a start runs, `catching_up` says how far it is, and recall (recall.py) says so in one line
after its hits (and the recall log line says partial).

Reindex builds index/memory.sqlite3.new from scratch while recall goes on, off the writer thread
(build_new; memoryd runs it in a child process, rebuild.py); then, on the writer, it catches the
new file up with what was written meanwhile and swaps it in (finish_new): renaming a file over an
SQLite database that has open connections corrupts it, so the swap waits for the recalls in flight,
closes every connection (the last close checkpoints and removes the WAL), renames, and reopens,
whatever failed in between (finishnew.py, swap.py). Recalls wait only for that swap. Something
memoryd did not make where the build or the swap would remove or replace a file (a folder at
index/memory.sqlite3, say) refuses the reindex in one line naming it, before the build and again
before the swap, and is left as it is (dbfile.in_the_way).

At open (openfound.py): a memory.sqlite3.new left by a reindex that was killed is removed (logged),
and so is the temporary file of the merge mark a kill left before its rename
(dbfile.remove_own_temps); a damaged index (not SQLite, other tables, failing quick_check) is
deleted (it is disposable) and replaced by an empty one, logged once with the runbook entry
memory-index-damaged; so is an index built with other settings (max_class, max_record_bytes,
format: the settings table), logged. The catch-up fills it again, and recall answers from what is
there meanwhile. The recall mode's tables are built then too, or once memoryd listens
(modeprep.py); the common terms are counted ahead once it has caught up (warming.py).
"""

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator

from memoryd import modes
from memoryd.errors import IndexDamaged
from memoryd.home import FILE_MODE, Home, ensure_dir
from memoryd.index import (
    carryfile,
    finishnew,
    forgetsmeanwhile,
    gone,
    indexer,
    labelkept,
    newindex,
    notescatchup,
    notesparts,
    openfound,
    otherwrites,
    sessioncatchup,
)
from memoryd.index.connections import UNOPENED
from memoryd.index.dbfile import (
    DAMAGED,
    check_fts5,
    create_file,
    in_the_way,
    refusal,
)
from memoryd.index.indexer import RECORD_BYTES, Settings
from memoryd.index.modeprep import ModePrep
from memoryd.index.newindex import Rebuilt
from memoryd.index.notesseen import NotesSeen
from memoryd.index.samefile import GONE
from memoryd.index.warming import Warming
from proto.labels import CLASS_RANK

log = logging.getLogger(__name__)


class Index(ModePrep, Warming):
    def __init__(
        self,
        home: Home,
        *,
        max_class: str = "private",
        max_record_bytes: int = RECORD_BYTES,
        mode: str = "spec",
    ):
        if max_class not in CLASS_RANK:
            raise ValueError(f"not a data class: {max_class!r}")
        super().__init__(home.index_db, mode)  # ValueError for a name no mode has
        self.home = home
        self.max_class = max_class
        self.settings = Settings(max_class=max_class, max_record_bytes=max_record_bytes)
        self.new_path = newindex.new_path(self.path)
        # (logs read, logs) while the catch-up after a start runs; None when it is done.
        self.catching_up: tuple[int, int] | None = None
        # The session logs a whole pass of the catch-up tried and could not index (a log memoryd
        # may not read, a full disk), each with why: tried again until they are (catchup.py).
        self.not_indexed: dict[str, str] = {}
        # The logs the last reindex left out, for the catch-up to try again (service.py).
        self.left_out: list[str] = []
        # The logs left aside until they change, with why: a link or a FIFO, skipped whole, or
        # a damaged record, where the reading stopped. Replaced whole, never changed in place:
        # stats reads it from another thread.
        self.left_aside: dict[str, str] = {}
        self._on_close: list[Callable[[], None]] = []  # what closes with the index (on_close)
        # notes.md's stat when the index last read it: recall catches up a hand edit (service.py)
        # and forget refuses a note number the index may hold for another note (targets.py).
        self.notes_seen = NotesSeen(home.memory_file("notes.md"))
        # The labels of the file an open started anew replaced, per log still to be read
        # (openfound.carry).
        self._carried: dict[str, labelkept.Label] = {}
        # While notes.md is read a part at a time (notesparts.py): (bytes read, its size), which
        # recall says (meanwhile); None once the index holds all of it. notes_left is called, on
        # the writer, after a part that left some: the catch-up (catchup.py) reads the rest.
        self.notes_behind: tuple[int, int] | None = None
        self.notes_left: Callable[[], None] | None = None
        # Called, from any thread, with the sessions stats found removed from sessions/ that the
        # index still holds: memoryd's look drops them now (removedlook.py).
        self.gone_found: Callable[[list[str]], None] | None = None
        self._notes_told = notesparts.Told()
        # What forgets kept out when the reindex's build began, and whether the file it swapped
        # in owes a merge of forgotten words (forgetsmeanwhile.py).
        self.forgets_seen: frozenset[str] | None = None
        self.merge_after_swap = False
        # Whether another program wrote the file since memoryd's last commit, as open found it:
        # the start's sweep of what forgotten.jsonl lists looks only then (forgottensweep.py).
        self.others_wrote = False

    def open(self, *, defer_mode: bool = False) -> None:
        """Create or open the index; a damaged one is deleted and an empty one started (any
        other error, a full disk say, leaves the file as it is: StartFailed, dbfile.damage).
        defer_mode: an existing index whose mode tables must be rebuilt (the mode was changed, or
        a format step changed one: seconds at a few hundred thousand records) is left for
        prepare_mode, on the writer once memoryd listens; recall answers by the spec's search
        meanwhile, saying why (live, meanwhile)."""
        check_fts5()
        self._warm_stopped = False
        self.notes_seen.clear()
        self.notes_behind = None
        # A recall mode that cannot run (hybrid without its extra) refuses before any change.
        self.recall_mode.load()
        ensure_dir(self.home.index_dir)
        # Read before this start's first transaction seals the record anew (otherwrites.py).
        others = self.path.exists() and otherwrites.others_wrote(self.path)
        kept = openfound.clear(self)  # what a kill left, a damaged file (openfound.py)
        existed = self.path.exists()
        self.others_wrote = existed and others
        self._fresh_file = not existed
        if not existed:
            log.info("index %s: creating it; it fills from sessions/ and notes.md", self.path)
            create_file(self.path)
            conn = self._connect()
            with self._transaction(conn):
                indexer.create_schema(conn)
                indexer.write_stamp(conn, self.settings)
                self._carried = openfound.carry(self, conn, kept)
            self._writer = conn
        else:
            self._writer = self._connect()
            # What an index written before memory/labels.jsonl was kept had seen goes there once.
            labelkept.record(self.home, labelkept.old_labels(self.path))
        os.chmod(self.path, FILE_MODE)
        if self.mode != "hybrid":  # a switch away from hybrid before they were all given out
            carryfile.detach_and_remove(None, self.path)
        if defer_mode and existed and not modes.prepared(self._writer, self.mode):
            self.defer_mode()
            return
        self.prepare_mode()

    def end_carry(self) -> None:
        """On the writer: stop giving new rows the vectors kept from the index this one
        replaced (carryfile.py), and remove them: the catch-up after the start is done, or a
        forget must leave the old rows' text nowhere."""
        carryfile.end(self._writer, self.path)

    def close(self) -> None:
        self.stop_warming(for_good=True)
        if self._live is not None:
            self._live.close()
            self._live = None
        with self._gate.exclusive():
            self._close_all()
        with self._pool_lock:
            closing, self._on_close = self._on_close, []
        for close in closing:
            close()

    def on_close(self, close: Callable[[], None]) -> None:
        """Call close when the index closes (a Recaller made for it by a test or benchmark)."""
        with self._pool_lock:
            self._on_close.append(close)

    # --- keeping up -----------------------------------------------------------------------------
    def sessions(self) -> list[str]:
        """The sessions whose log can be indexed, by name (newindex.indexable_sessions); none
        while sessions/ is not a folder memoryd can list (listed)."""
        return self.listed() or []

    def listed(self) -> list[str] | None:
        """The sessions whose log can be indexed, by name, or None when sessions/ cannot be
        listed now (newindex.listed_sessions, which says so). What is left aside is what this
        listing skipped, and the damaged records of logs it lists: a session removed or mended
        since is left aside no more (and nothing changes while nothing could be listed)."""
        return sessioncatchup.listed(self)

    def _aside(self, session: str, why: str | None) -> None:
        """Note that a session's log is left aside, and why (None: it is not)."""
        sessioncatchup.aside(self, session, why)

    def drop_removed(self, listed: list[str]) -> int:
        """On the writer: drop the rows of the sessions the index holds whose log is gone, but
        for those listed (the start's listing of sessions/ found them); how many (gone.py)."""
        with self._damage_refused("the removed sessions"):
            removed = gone.gone(self._write(), self.home, listed)
        gone.remove(self, removed)
        return len(removed)

    def catch_up_session_part(self, session: str) -> tuple[int, bool]:
        """Index one part of a session's new records: (rows added, read to the end). A session
        whose log is gone is SessionUnknown, its rows dropped from the index (sessioncatchup)."""
        return sessioncatchup.catch_up_part(self, session)

    def catch_up_session(self, session: str) -> int:
        """Index a session's new records, a part at a time; returns the rows added."""
        added, done = self.catch_up_session_part(session)
        while not done:
            more, done = self.catch_up_session_part(session)
            added += more
        return added

    def notes_file(self) -> str | None:
        """notes.md's stat now, taken before memoryd writes it: catch_up_notes(own_from) after
        the write then tells memoryd's own change from the owner's (indexer.index_notes)."""
        return notescatchup.notes_file(self)

    def catch_up_notes(self, own_from: str | None = None) -> int:
        """Index one part of notes.md's new entries (notesparts.py, notescatchup.py); returns the
        rows added. own_from: notes_file() before memoryd's own write this follows (None: any
        change is another's). notes_behind says whether some is left, and notes_left is called
        if so."""
        return notescatchup.catch_up(self, own_from)

    @property
    def meanwhile(self) -> str | None:
        """The line recall adds after its hits while the recall mode's tables are not ready
        (modeprep.py) or notes.md is being read a part at a time."""
        said = super().meanwhile
        behind = self.notes_behind
        if behind is None:
            return said
        notes = (
            f"(the index is catching up with memory/notes.md: {behind[0]:,} of {behind[1]:,}"
            " bytes read; the notes after them are not found yet)"
        )
        return notes if said is None else f"{said} {notes}"

    @contextlib.contextmanager
    def _damage_refused(self, what: str) -> Iterator[None]:
        """A damaged file met while indexing is the answer the readers give too (IndexDamaged),
        logged in one line: an expected state of a disposable file, not a bug. A full disk, or
        another error of the disk or of access, is no damage: IndexUnwritable says what is
        wrong, and the catch-up tries it again (its caller logs it)."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            refused = refusal(
                error,
                self.path,
                lambda wrong, when: (
                    f"the memory index cannot take {what} now: {wrong}; nothing"
                    f" is lost, and it is tried again {when}"
                ),
            )
            if isinstance(refused, IndexDamaged):
                log.error("index %s: cannot index %s: %s", self.path, what, error)
            raise refused from None

    def catch_up_all(self) -> int:
        """Catch up every session log and notes.md on this thread; returns the rows added."""
        return sessioncatchup.catch_up_all(self)

    def reindex(self, progress: Callable[[int], None] | None = None) -> tuple[int, int, int]:
        """Build a new index from sessions/ and notes.md and swap it in: (logs, records, notes)."""
        done = self.finish_new(self.build_new(progress))
        forgetsmeanwhile.merge_after(self)
        return done

    def build_new(self, progress: Callable[[int], None] | None = None) -> Rebuilt:
        """Build index/memory.sqlite3.new from sessions/ and notes.md (newindex.py) in this
        process; memoryd's reindex runs the same build in a child process (rebuild.py)."""
        in_the_way(self.path)
        forgetsmeanwhile.began(self)
        return newindex.build(self.home, self.settings, self.mode, self.path, progress)

    def finish_new(self, built: Rebuilt) -> tuple[int, int, int]:
        """On the writer: catch the new file up with what was written during the build, then
        swap it in (finishnew.py). Returns (logs, records, notes) of the new index."""
        return finishnew.finish(self, built)


__all__ = ["DAMAGED", "GONE", "UNOPENED", "Index", "Rebuilt", "check_fts5"]
