"""The index file {home}/index/memory.sqlite3 and the connections to it (spec 6).

One writer thread calls catch_up_* and reindex, which are serialised on the writer's connection;
recall runs on any other thread, each call on a read connection taken from a small pool. The file
is in WAL mode, so readers never wait for the writer.

Catching up goes a part at a time (indexer.index_session_part), each part its own transaction,
so the writer thread can run a memory call between two parts; a transaction that changed nothing
is rolled back, not committed. While the catch-up after a start runs, `catching_up` says how far it
is, and recall (recall.py) says so in one line after its hits (and the recall log line says
partial).

Recall itself lives in recall.py: the index only hands out read connections (reader), from a
small pool, under the swap gate, a damaged file reported as IndexDamaged.

Reindex builds index/memory.sqlite3.new from scratch while recall goes on, off the writer thread
(build_new; memoryd runs it in a child process, rebuild.py); then, on the writer, it catches the
new file up with what was written meanwhile and swaps it in (finish_new): renaming a file over an
SQLite database that has open connections corrupts it, so the swap waits for the recalls in
flight, closes every connection (the last close checkpoints and removes the WAL), renames, and
reopens. Recalls wait only for that swap.

At open: a memory.sqlite3.new left by a reindex that was killed is removed (logged); a damaged
index (not SQLite, other tables, failing quick_check) is deleted (it is disposable) and replaced
by an empty one, logged once with the runbook entry memory-index-damaged; so is an index built
with other settings (max_class, max_record_bytes, format: the settings table), logged. The
catch-up fills it again, and recall answers from what is there meanwhile.
"""

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator

from memoryd import modes
from memoryd.errors import IndexDamaged, SessionUnknown
from memoryd.home import FILE_MODE, Home, ensure_dir, fsync_dir
from memoryd.index import indexer, newindex, warmcounts
from memoryd.index.dbfile import Gate, check_fts5, create_file, damage, remove_database
from memoryd.index.indexer import RECORD_BYTES, Settings
from memoryd.index.newindex import Rebuilt
from memoryd.journal import forgotten
from memoryd.modes import registry
from memoryd.search import generation, vocab
from proto.labels import CLASS_RANK

log = logging.getLogger(__name__)

DAMAGED = (
    "the memory index is damaged; rebuild it with bxctl reindex (runbook: memory-index-damaged)"
)
GONE = (
    "the memory index index/memory.sqlite3 was removed or replaced while memoryd ran; rebuild it"
    " with bxctl reindex (runbook: memory-index-damaged)"
)
UNOPENED = (
    "the memory index index/memory.sqlite3 cannot be opened (memoryd's log says why; runbook:"
    " memory-index-damaged)"
)


class Index:
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
        self.recall_mode = registry.get(mode)  # ValueError for a name no mode has
        self.mode = mode
        self.home = home
        self.max_class = max_class
        self.settings = Settings(max_class=max_class, max_record_bytes=max_record_bytes)
        self.path = home.index_db
        self.new_path = newindex.new_path(self.path)
        # (logs read, logs) while the catch-up after a start runs; None when it is done.
        self.catching_up: tuple[int, int] | None = None
        self._gate = Gate()
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._on_close: list[Callable[[], None]] = []  # what closes with the index (on_close)
        self._live: registry.Live | None = None  # what the recall mode runs while open
        self._warming: sqlite3.Connection | None = None  # warm_counts' reader, while it reads
        self._warm_stopped = False
        # The mode's tables, when open(defer_mode) left them to prepare_mode: "pending" until
        # built, "preparing" while built, "failed" when that failed; None once ready.
        self._mode_state: str | None = None
        # (device, inode) of the file the connections are to, taken at each connect of the
        # writer; recall refuses once the path names another file or none (_check_file).
        self._file: tuple[int, int] | None = None
        self._gone_logged = False

    # --- connections ----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        st = os.stat(self.path)
        self._file, self._gone_logged = (st.st_dev, st.st_ino), False
        return conn

    def _check_file(self) -> None:
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

    def _write(self) -> sqlite3.Connection:
        if self._writer is None:
            raise IndexDamaged("the memory index is not open")
        return self._writer

    @contextlib.contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        # A transaction that changed nothing is rolled back (no commit, no fsync); total_changes
        # does not count schema changes (a recall mode's tables), schema_version does.
        changes = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        schema = conn.execute("PRAGMA schema_version").fetchone()[0]
        mark = generation.begin(conn)
        try:
            yield conn
            changed = conn.total_changes != changes
            if not changed:
                changed = conn.execute("PRAGMA schema_version").fetchone()[0] != schema
            if changed or not mark.own:  # not own: another program wrote, or no record yet
                generation.seal(conn, mark)  # what recall's cached term counts are keyed to
                changed = True
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT" if changed else "ROLLBACK")

    def _close_all(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def open(self, *, defer_mode: bool = False) -> None:
        """Create or open the index; a damaged one is deleted and an empty one started.
        defer_mode: an existing index whose mode tables must be rebuilt (the mode was changed:
        seconds at a few hundred thousand records) is left for prepare_mode, on the writer once
        memoryd listens; recall is refused meanwhile (live)."""
        check_fts5()
        self._warm_stopped = False
        # A recall mode that cannot run (hybrid without its extra) refuses before any change.
        self.recall_mode.load()
        ensure_dir(self.home.index_dir)
        if any(os.path.lexists(f"{self.new_path}{suffix}") for suffix in ("", "-wal", "-journal")):
            log.info("index %s: removed, left by a reindex that did not finish", self.new_path)
            remove_database(self.new_path)
        if self.path.exists():
            problem, stamp = damage(self.path)
            wanted = self.settings.stamp()
            if problem is not None:
                log.warning(
                    "memory-index-damaged: %s: %s; rebuilding it from sessions/ and notes.md",
                    self.path,
                    problem,
                )
                remove_database(self.path)
            elif stamp != wanted:
                log.warning(
                    "index %s: built with %s, configured %s; rebuilding it from sessions/ and"
                    " notes.md",
                    self.path,
                    indexer.describe_stamp(stamp),
                    indexer.describe_stamp(wanted),
                )
                remove_database(self.path)
        existed = self.path.exists()
        if not existed:
            log.info("index %s: creating it; it fills from sessions/ and notes.md", self.path)
            create_file(self.path)
            conn = self._connect()
            with self._transaction(conn):
                indexer.create_schema(conn)
                indexer.write_stamp(conn, self.settings)
            self._writer = conn
        else:
            self._writer = self._connect()
        os.chmod(self.path, FILE_MODE)
        if defer_mode and existed and not modes.prepared(self._writer, self.mode):
            self._mode_state = "pending"
            log.info(
                "index %s: recall mode %s: its tables are built once memoryd listens;"
                " recall waits for them",
                self.path,
                self.mode,
            )
            return
        self.prepare_mode()

    def prepare_mode(self) -> None:
        """The configured mode's tables, built from the spec's if the index was made for another
        mode, then what the mode runs beside the index (on the writer). A failure is logged and
        recall refused (DAMAGED) until a reindex builds a file for the mode."""
        with self._pool_lock:
            if self._mode_state == "stopped":
                return
            deferred = self._mode_state is not None
            self._mode_state = "preparing" if deferred else None
        try:
            with self._transaction(self._write()) as conn:
                modes.prepare(conn, self.mode, self.path)
        except (sqlite3.Error, IndexDamaged) as error:
            if not deferred:
                raise
            with self._pool_lock:
                stopped = self._mode_state == "stopped"
                self._mode_state = "stopped" if stopped else "failed"
            if stopped:
                log.info(
                    "index %s: recall mode %s: not built, memoryd stopping", self.path, self.mode
                )
            else:
                log.error("index %s: recall mode %s: not built: %s", self.path, self.mode, error)
            return
        with self._pool_lock:
            self._mode_state = None
        if self._live is None:
            self._live = self.recall_mode.open(self._embedding_connection, self.path)

    @property
    def mode_pending(self) -> bool:
        """Whether prepare_mode has still to build the mode's tables (open(defer_mode))."""
        return self._mode_state is not None

    def stop_preparing(self) -> None:
        """memoryd is stopping: a deferred prepare_mode is interrupted (rolled back, the index as
        it was) or not started."""
        with self._pool_lock:
            if self._mode_state == "preparing" and self._writer is not None:
                self._writer.interrupt()
            if self._mode_state in ("pending", "preparing"):
                self._mode_state = "stopped"

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
        """The sessions whose log can be indexed, by name (newindex.indexable_sessions)."""
        return newindex.indexable_sessions(self.home)

    def catch_up_session_part(self, session: str) -> tuple[int, bool]:
        """Index one part of a session's new records: (rows added, read to the end)."""
        problem = indexer.log_problem(self.home, session)
        if isinstance(problem, FileNotFoundError):
            raise SessionUnknown(f"no session {session} under sessions/")
        if problem is not None:
            log.warning("session log %s: skipped: %s", self.home.session_log(session), problem)
            raise SessionUnknown(f"session {session}: {problem}")
        conn = self._write()
        with self._damage_refused(f"session {session}"):
            with self._transaction(conn):
                return indexer.index_session_part(conn, self.home, session, self.settings)

    def catch_up_session(self, session: str) -> int:
        """Index a session's new records, a part at a time; returns the rows added."""
        added, done = self.catch_up_session_part(session)
        while not done:
            more, done = self.catch_up_session_part(session)
            added += more
        return added

    def catch_up_notes(self) -> int:
        """Index the new entries of notes.md; returns the rows added."""
        conn = self._write()
        with self._damage_refused("memory/notes.md"):
            with self._transaction(conn):
                return indexer.index_notes(conn, self.home, self.settings)

    @contextlib.contextmanager
    def _damage_refused(self, what: str) -> Iterator[None]:
        """A damaged file met while indexing is the answer the readers give too (IndexDamaged),
        logged in one line: an expected state of a disposable file, not a bug."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            log.error("index %s: cannot index %s: %s", self.path, what, error)
            raise IndexDamaged(DAMAGED) from None

    def catch_up_all(self) -> int:
        """Catch up every session log and notes.md on this thread; returns the rows added."""
        added = 0
        for session in self.sessions():
            try:
                added += self.catch_up_session(session)
            except (OSError, SessionUnknown) as error:
                log.warning("session log %s: skipped: %s", self.home.session_log(session), error)
        added += self.catch_up_notes()
        self.catching_up = None
        return added

    def reindex(self, progress: Callable[[int], None] | None = None) -> tuple[int, int, int]:
        """Build a new index from sessions/ and notes.md and swap it in: (logs, records, notes)."""
        return self.finish_new(self.build_new(progress))

    def build_new(self, progress: Callable[[int], None] | None = None) -> Rebuilt:
        """Build index/memory.sqlite3.new from sessions/ and notes.md (newindex.py) in this
        process; memoryd's reindex runs the same build in a child process (rebuild.py)."""
        return newindex.build(self.home, self.settings, self.mode, self.path, progress)

    def finish_new(self, built: Rebuilt) -> tuple[int, int, int]:
        """On the writer: catch the new file up with what was written during the build, then
        swap it in. Returns (logs, records, notes) of the new index."""
        conn = sqlite3.connect(built.path, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous = NORMAL")
            with self._transaction(conn):
                for session in self.sessions():
                    indexer.index_session(conn, self.home, session, self.settings)
                indexer.index_notes(conn, self.home, self.settings)
                # A forget during the build may have come after the build read its record.
                gone = forgotten.condition(forgotten.keys(self.home))
                sql = "SELECT EXISTS (SELECT 1 FROM sources WHERE {})"
                if gone is not None and conn.execute(sql.format(gone[0]), gone[1]).fetchone()[0]:
                    conn.execute("PRAGMA secure_delete = ON")
                    indexer._delete_rows(conn, *gone)
        finally:
            conn.close()  # the last connection: checkpoints and removes the new file's WAL
        with open(built.path, "rb") as f:
            os.fsync(f.fileno())
        self.stop_warming()
        with self._gate.exclusive():
            self._close_all()
            # Closed cleanly, the old file left no WAL; anything left over belongs to it alone.
            for suffix in ("-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.path}{suffix}")
            os.replace(built.path, self.path)
            fsync_dir(self.path.parent)
            vocab.forget()  # nothing counted in the old file is kept
            self._writer = self._connect()
        if self._live is not None:
            self._live.reset()
        log.info(
            "index %s: rebuilt from %d logs, %d records, %d notes",
            self.path,
            built.logs,
            built.records,
            built.notes,
        )
        return built.logs, built.records, built.notes

    # --- readers -------------------------------------------------------------------------------
    @property
    def live(self) -> registry.Live:
        """The recall mode's state beside the open index, which recall searches."""
        if self._live is None:
            if self._mode_state == "failed":
                raise IndexDamaged(DAMAGED)
            if self._mode_state is not None:
                raise IndexDamaged(
                    f"the memory index is being prepared for recall mode {self.mode}, changed"
                    " since memoryd last ran; recall answers once that is done. Try again shortly."
                )
            raise IndexDamaged("the memory index is not open")
        return self._live

    def _take(self) -> sqlite3.Connection:
        with self._pool_lock:
            if self._pool:
                return self._pool.pop()
        if self._writer is None:
            raise IndexDamaged("the memory index is not open")
        try:
            conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30
            )
        except sqlite3.Error as error:  # its folder unreadable, say: named, in one line
            log.error("index %s: cannot open it to read: %s", self.path, error)
            raise IndexDamaged(UNOPENED) from None
        try:
            conn.execute("PRAGMA query_only = 1")
        except sqlite3.Error as error:
            conn.close()
            log.error("index %s: cannot open it to read: %s", self.path, error)
            raise IndexDamaged(UNOPENED) from None
        return conn

    def _give(self, conn: sqlite3.Connection) -> None:
        with self._pool_lock:
            self._pool.append(conn)

    @contextlib.contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """A read connection from the pool, held under the swap gate (a reindex's swap waits for
        it) and given back after. A sqlite3.DatabaseError inside becomes IndexDamaged (logged,
        the connection closed, never given back)."""
        with self._gate.shared():
            self._check_file()
            conn = self._take()
            try:
                yield conn
            except sqlite3.DatabaseError as error:
                conn.close()
                log.error("index %s: recall failed: %s", self.path, error)
                raise IndexDamaged(DAMAGED) from None
            except BaseException:
                conn.close()
                raise
            self._give(conn)

    def warm_counts(self) -> None:
        """Count the common terms of the index's tables in one pass each (warmcounts.py), on a
        reader under the swap gate; stop_warming() interrupts it. Logged either way."""
        with self._gate.shared():
            with self._pool_lock:
                if self._warm_stopped or self._writer is None:  # closing, or closed
                    return
            try:
                conn = self._take()
            except IndexDamaged:  # logged; recall meets it too
                return
            with self._pool_lock:
                if self._warm_stopped:  # stopped meanwhile: nothing to interrupt it later
                    self._pool.append(conn)
                    return
                self._warming = conn
            try:
                spec, context, took = warmcounts.warm(conn)
            except sqlite3.Error as error:  # interrupted (a close, a swap), or a damaged file
                log.info("index %s: common terms not counted ahead: %s", self.path, error)
                conn.close()  # never given back half way through a transaction
                return
            finally:
                with self._pool_lock:
                    self._warming = None
            self._give(conn)
        log.info(
            "index %s: counted ahead the common terms of recall (%d, context %d) in %.1f s",
            self.path,
            spec,
            context,
            took,
        )

    def stop_warming(self, for_good: bool = False) -> None:
        """Interrupt warm_counts' pass, if one is reading (a swap needs its reader); for_good:
        and start none until the index opens again (memoryd closes)."""
        with self._pool_lock:
            self._warm_stopped = self._warm_stopped or for_good
            if self._warming is not None:
                self._warming.interrupt()

    @contextlib.contextmanager
    def _embedding_connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for a recall mode's background work (hybrid's embedder), held under
        the gate."""
        with self._gate.shared():
            if self._writer is None:
                raise sqlite3.OperationalError("the memory index is not open")
            conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30
            )
            try:
                yield conn
            finally:
                conn.close()

    def drain_embeddings(self, timeout: float = 60.0) -> bool:
        """Wait until the recall mode's background work is done (hybrid: every row has its
        vector; tests and benchmarks)."""
        return self._live is None or self._live.drain(timeout)


__all__ = ["Index", "Rebuilt", "check_fts5"]
