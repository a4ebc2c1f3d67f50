"""The index file {home}/index/memory.sqlite3 (spec 6): opening it, catching it up, reindexing.

One writer thread calls catch_up_* and reindex, which are serialised on the writer's connection;
recall runs on any other thread, each call on a read connection taken from a small pool
(connections.py). Recall itself lives in recall.py: the index only hands out read connections
(reader), under the swap gate, a damaged file reported as IndexDamaged, and refuses alike once
the file was deleted or replaced while open (samefile.py).

Catching up goes a part at a time (indexer.index_session_part), each part its own transaction,
so the writer thread can run a memory call between two parts; a transaction that changed nothing
is rolled back, not committed. While the catch-up after a start runs, `catching_up` says how far it
is, and recall (recall.py) says so in one line after its hits (and the recall log line says
partial).

Reindex builds index/memory.sqlite3.new from scratch while recall goes on, off the writer thread
(build_new; memoryd runs it in a child process, rebuild.py); then, on the writer, it catches the
new file up with what was written meanwhile and swaps it in (finish_new): renaming a file over an
SQLite database that has open connections corrupts it, so the swap waits for the recalls in
flight, closes every connection (the last close checkpoints and removes the WAL), renames, and
reopens, whatever failed in between (swap.py). Recalls wait only for that swap. Something memoryd
did not make where the build or the swap would remove or replace a file (a folder at
index/memory.sqlite3, say) refuses the reindex in one line naming it, before the build and again
before the swap, and is left as it is (dbfile.in_the_way).

At open: a memory.sqlite3.new left by a reindex that was killed is removed (logged), and so is the
temporary file of the merge mark a kill left before its rename (dbfile.remove_own_temps); a damaged
index (not SQLite, other tables, failing quick_check) is deleted (it is disposable) and replaced
by an empty one, logged once with the runbook entry memory-index-damaged; so is an index built
with other settings (max_class, max_record_bytes, format: the settings table), logged. The
catch-up fills it again, and recall answers from what is there meanwhile. The recall mode's
tables are built then too, or once memoryd listens (modeprep.py); the common terms are counted
ahead once it has caught up (warming.py).
"""

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator

from memoryd import modes
from memoryd.errors import IndexDamaged, IndexUnwritable, SessionUnknown
from memoryd.home import FILE_MODE, Home, ensure_dir
from memoryd.index import (
    carryfile,
    forgetsmeanwhile,
    formatstep,
    gone,
    indexer,
    labelkept,
    newindex,
    notesparts,
    swap,
)
from memoryd.index.connections import UNOPENED, ZERO_FREED_PAGES
from memoryd.index.dbfile import (
    DAMAGED,
    check_fts5,
    create_file,
    damage,
    in_the_way,
    refusal,
    remove_database,
    remove_own_temps,
)
from memoryd.index.indexer import RECORD_BYTES, Settings
from memoryd.index.modeprep import ModePrep
from memoryd.index.newindex import Rebuilt
from memoryd.index.notesseen import NotesSeen
from memoryd.index.samefile import GONE
from memoryd.index.warming import Warming
from memoryd.search import vocab
from memoryd.search.schema import DELETIONS_PRAGMA
from proto.files import NotRegular
from proto.labels import CLASS_RANK
from proto.plural import counted

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
        # The labels of the file an open started anew replaced, per log still to be read (_carry).
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
        remove_own_temps(self.home.index_dir)
        if any(os.path.lexists(f"{self.new_path}{suffix}") for suffix in ("", "-wal", "-journal")):
            log.info("index %s: removed, left by a reindex that did not finish", self.new_path)
            remove_database(self.new_path)
        # The sessions' labels an index started anew must not lose (labelkept.py): read from
        # the file it replaces, when that can still be read (_carry).
        kept: dict[str, labelkept.Label] = {}
        if self.path.exists():
            problem, stamp = damage(self.path)
            wanted = self.settings.stamp()
            if problem is not None or stamp != wanted:
                kept = labelkept.old_labels(self.path)
                labelkept.record(self.home, kept)
            if problem is not None:
                log.warning(
                    "memory-index-damaged: %s: %s; rebuilding it from sessions/ and notes.md",
                    self.path,
                    problem,
                )
                remove_database(self.path)
            elif stamp != wanted and not formatstep.raised(self.path, stamp, wanted):
                log.warning(
                    "index %s: built with %s, configured %s; rebuilding it from sessions/ and"
                    " notes.md",
                    self.path,
                    indexer.describe_stamp(stamp),
                    indexer.describe_stamp(wanted),
                )
                if not (self.mode == "hybrid" and carryfile.set_aside(self.path)):
                    remove_database(self.path)
        existed = self.path.exists()
        self._fresh_file = not existed
        if not existed:
            log.info("index %s: creating it; it fills from sessions/ and notes.md", self.path)
            create_file(self.path)
            conn = self._connect()
            with self._transaction(conn):
                indexer.create_schema(conn)
                indexer.write_stamp(conn, self.settings)
                self._carried = self._carry(conn, kept)
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

    def _carry(self, conn, kept: dict[str, labelkept.Label]) -> dict[str, labelkept.Label]:
        """The old file's labels in the new one, as a reindex's build keeps them (newindex.py):
        a removed session's is left behind for a log made again under its name; a log that is
        there is read as it is and, when it ends laxer than the old file had read it, again at
        that label (the floor each log's first catch-up is given: catch_up_session_part). Kept
        in memory until that catch-up: a stop before it leaves those logs the journal's floor."""
        there: dict[str, labelkept.Label] = {}
        for name, label in kept.items():
            session = name.removeprefix("sessions/").removesuffix("/0.jsonl")
            if os.path.lexists(self.home.session_log(session)):
                there[name] = label
            else:
                labelkept.keep_left(conn, name, label)
        return there

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
        skipped: dict[str, str] = {}
        found = newindex.listed_sessions(self.home, skipped)
        if found is None:
            return None
        listed = set(found)
        damaged = {k: v for k, v in self.left_aside.items() if k in listed and k not in skipped}
        self.left_aside = {**damaged, **skipped}
        return found

    def _aside(self, session: str, why: str | None) -> None:
        """Note that a session's log is left aside, and why (None: it is not)."""
        if why is not None:
            self.left_aside = {**self.left_aside, session: why}
        elif session in self.left_aside:
            self.left_aside = {k: v for k, v in self.left_aside.items() if k != session}

    def drop_removed(self, listed: list[str]) -> int:
        """On the writer: drop the rows of the sessions the index holds whose log is gone, but
        for those listed (the start's listing of sessions/ found them); how many (gone.py)."""
        with self._damage_refused("the removed sessions"):
            removed = gone.gone(self._write(), self.home, listed)
        gone.remove(self, removed)
        return len(removed)

    def catch_up_session_part(self, session: str) -> tuple[int, bool]:
        """Index one part of a session's new records: (rows added, read to the end). A session
        whose log is gone is SessionUnknown, its rows dropped from the index."""
        problem = indexer.log_problem(self.home, session)
        if isinstance(problem, FileNotFoundError):
            self._aside(session, None)
            if gone.holds(self._write(), session):
                gone.remove(self, [session])
            raise SessionUnknown(f"no session {session} under sessions/")
        if problem is not None and not isinstance(problem, NotRegular):
            raise problem  # a folder memoryd may not search, say: tried again (catchup.py)
        if problem is not None:
            log.warning("session log %s: skipped: %s", self.home.session_log(session), problem)
            self._aside(session, problem.strerror or str(problem))
            raise SessionUnknown(f"session {session}: {problem}")
        conn = self._write_same()
        part = indexer.one_part()
        with self._damage_refused(f"session {session}"):
            with self._transaction(conn):
                name = indexer.log_name(session)
                done = indexer.index_session_part(
                    conn, self.home, session, self.settings, part=part, kept=self._carried.get(name)
                )
        if done[1]:
            self._carried.pop(name, None)
            self._aside(session, part.damaged)
        return done

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
        try:
            return indexer.file_of(self.home.memory_file("notes.md"), whole=True)
        except OSError:  # not known: the catch-up after the write takes any change as another's
            return None

    def catch_up_notes(self, own_from: str | None = None) -> int:
        """Index one part of notes.md's new entries (notesparts.py); returns the rows added.
        own_from: notes_file() before memoryd's own write this follows (None: any change is
        another's). notes_behind says whether some is left, and notes_left is called if so."""
        conn = self._write_same()
        seen = self.notes_seen.look()
        behind = self.notes_behind
        try:
            with self._damage_refused("memory/notes.md"):
                deletions = _deletions(conn)
                with self._transaction(conn):
                    added, done = notesparts.index_notes_part(
                        conn,
                        self.home,
                        self.settings,
                        own_from,
                        told=self._notes_told,
                    )
                    if not done:  # said before the commit: a recall that sees the part says so
                        part_reached = _notes_reached(conn)
                        at = part_reached[0] if part_reached else 0
                        self.notes_behind = (at, _size(seen))
                # It deletes rows only to read notes.md again from its start.
                renumbered = _deletions(conn) != deletions
                reached = _notes_reached(conn)
        except BaseException as error:
            self.notes_behind = behind  # nothing of the part was committed
            # Not read for want of room: the next recall tries again, as for a changed notes.md.
            self.notes_seen.done(seen, ok=False, again=isinstance(error, IndexUnwritable))
            raise
        self.notes_seen.done(seen, renumbered=renumbered, reached=reached)
        self.notes_behind = None if done else (reached[0] if reached else 0, _size(seen))
        if not done and self.notes_left is not None:
            self.notes_left()
        return added

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
        added = 0
        sessions = self.sessions()
        self.drop_removed(sessions)
        for session in sessions:
            try:
                added += self.catch_up_session(session)
            except (OSError, SessionUnknown) as error:
                log.warning("session log %s: skipped: %s", self.home.session_log(session), error)
        # All of notes.md here, part after part: nothing is handed to memoryd's catch-up.
        left, self.notes_left = self.notes_left, None
        try:
            added += self.catch_up_notes()
            while self.notes_behind is not None:
                added += self.catch_up_notes()
        finally:
            self.notes_left = left
        self.catching_up = None
        return added

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
        swap it in. Returns (logs, records, notes) of the new index."""
        seen = self.notes_seen.look()  # before the catch-up reads notes.md
        # notes.md changed since the old index read it: the new one may number its notes anew.
        renumbered = seen != self.notes_seen.read
        conn = sqlite3.connect(built.path, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(ZERO_FREED_PAGES)
            _count_changes(conn)
            deletions = _deletions(conn)
            with self._transaction(conn):
                skipped: dict[str, str] = {}
                sessions = newindex.indexable_sessions(self.home, skipped)
                damaged: dict[str, str] = {}
                self.left_out = newindex.catch_up(conn, self.home, self.settings, sessions, damaged)
                deleted = _deletions(conn) != deletions
                unread = _nothing_read(conn, damaged)
            # What the catch-up added and dropped: a restore or a forget during the build
            # changed what the build counted, and the answer is what the new file holds.
            changed = dict(conn.execute("SELECT kind, n FROM temp.caught").fetchall())
        finally:
            conn.close()  # the last connection: checkpoints and removes the new file's WAL
        with open(built.path, "rb") as f:
            os.fsync(f.fileno())
        # Rows of what was forgotten during the build, deleted by the catch-up, leave their
        # words in the new file's term lists: merged once it is in use (forgetsmeanwhile.py).
        forgetsmeanwhile.owe_if_changed(self, deleted)
        in_the_way(self.path)  # a folder put there during the build is not renamed over
        self.stop_warming()
        with self._gate.exclusive():
            self._close_all()
            # The connections are opened again whatever happens (swap.py): on the old file when
            # the rename failed, on the new one once it is made, synced or not.
            try:
                unsynced = swap.put_in_place(built.path, self.path)
            except BaseException:
                swap.reopen(self, replaced=False)
                raise
            vocab.forget()  # nothing counted in the old file is kept
            swap.reopen(self, replaced=True)
            try:
                reached = _notes_reached(self._write())
            except sqlite3.Error:  # not known: a forget's note number is checked again
                reached = None
            self.notes_seen.done(seen, renumbered=renumbered, reached=reached)
            self.notes_behind = None  # the new file holds all of notes.md (newindex.catch_up)
        if self._live is not None:
            self._live.reset()
        records = built.records + changed.get("session", 0)
        notes = built.notes + sum(changed.get(kind, 0) for kind in NOTE_KINDS)
        self.left_aside = {**skipped, **damaged}  # what the new file holds, no more
        # The logs the new file holds a reading of, wholly or up to a damaged record: one damaged
        # at its first record is left aside, not reindexed.
        logs = len(sessions) - len(self.left_out) - unread
        log.info(
            "index %s: rebuilt from %s, %s, %s%s",
            self.path,
            counted(logs, "log"),
            counted(records, "record"),
            counted(notes, "note"),
            f"; {counted(len(self.left_out), 'log')} left out" if self.left_out else "",
        )
        if unsynced is not None:
            raise swap.not_synced(self, unsynced, logs, records, notes)
        return logs, records, notes


NOTE_KINDS = ("noted", "moved", "dropped")


def _nothing_read(conn: sqlite3.Connection, damaged: dict[str, str]) -> int:
    """How many of the damaged logs the file holds no record of (damaged at their first)."""
    states = (indexer.load_state(conn, indexer.log_name(session)) for session in damaged)
    return sum(1 for state in states if state is None or state.records == 0)


def _deletions(conn: sqlite3.Connection) -> int:
    """The file's count of row deletions, raised by each (schema.DELETIONS_PRAGMA)."""
    return int(conn.execute(f"PRAGMA {DELETIONS_PRAGMA}").fetchone()[0])


def _size(seen: tuple) -> int:
    """notes.md's size in its stat as NotesSeen takes it (0 when missing or unreadable)."""
    return int(seen[3]) if len(seen) == 6 else 0


def _notes_reached(conn: sqlite3.Connection) -> tuple[int, str, str | None] | None:
    """The offset the index holds notes.md to, the hash of the bytes just before it and the
    digest of every whole block before it (NotesSeen tells notes.md that only grew from one
    edited with them), or None when it holds none."""
    state = indexer.load_state(conn, indexer.NOTES_LOG)
    return None if state is None else (state.bytes, state.tail, state.prefix)


def _count_changes(conn: sqlite3.Connection) -> None:
    """Count, by kind, the rows added to and removed from sources on conn from now on (in
    temp.caught, gone with the connection)."""
    conn.execute("CREATE TEMP TABLE caught (kind TEXT PRIMARY KEY, n INTEGER)")
    for event, row, step in (("INSERT", "new", 1), ("DELETE", "old", -1)):
        conn.execute(
            f"CREATE TEMP TRIGGER caught_{event.lower()} AFTER {event} ON main.sources BEGIN "
            f"INSERT INTO caught VALUES ({row}.kind, {step}) "
            f"ON CONFLICT(kind) DO UPDATE SET n = n + {step}; END"
        )  # noqa: S608 (fixed text: no value of anyone's goes into it)


__all__ = ["DAMAGED", "GONE", "UNOPENED", "Index", "Rebuilt", "check_fts5"]
