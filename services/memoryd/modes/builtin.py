"""The context and hybrid modes as the registry keeps them: which tables each adds, what each
runs beside an open index. hybrid's numpy and model are imported only when it is used, so the
spec and context modes run without the [hybrid] extra."""

import contextlib
import logging
import sqlite3
import threading
import time
from pathlib import Path

from memoryd.index import dbname
from memoryd.modes import addressed, context, hybrid_tables
from memoryd.modes.registry import Connect, Fill, Live, Mode
from memoryd.search.hit import Hit
from memoryd.search.query import Query

log = logging.getLogger(__name__)

# How long close() waits for the thread of the child's first start once the child is ended (it
# has only to return then).
CLOSE_JOIN = 5.0


class Context(Mode):
    name = "context"
    objects: tuple[str, ...] = context.OBJECTS

    def create(self, conn: sqlite3.Connection) -> None:
        context.create(conn)

    def drop(self, conn: sqlite3.Connection) -> None:
        context.drop(conn)

    def rows_added(
        self, conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]
    ) -> None:
        context.rows_added(conn, sources, texts)

    def rows_deleted(self, conn: sqlite3.Connection, where: str, params: tuple) -> None:
        context.rows_deleted(conn, where, params)

    def renew(self, conn: sqlite3.Connection, names: frozenset[str]) -> Fill | None:
        """context's own table built again from the rows (hybrid's vectors, which hold each
        row's text alone, kept as they are)."""
        if not names <= set(context.OBJECTS):
            return None
        context.drop(conn)
        context.create(conn)
        return context.rows_added

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        return context.search(conn, query, k)

    def open(self, connect: Connect, name: object) -> Live:
        return _ContextLive()


class _ContextLive:
    """context's Live: what it read of the names questions give (addressed.Speakers), kept
    across recalls and forgotten when the index file is replaced."""

    def __init__(self) -> None:
        self.speakers = addressed.Speakers()

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        return context.search(conn, query, k, self.speakers)

    def reset(self) -> None:
        self.speakers.clear()

    def drain(self, timeout: float) -> bool:
        return True

    def close(self) -> None:
        pass


class Hybrid(Context):
    """context's tables plus one vector per row, and an embedder thread beside the index."""

    name = "hybrid"
    objects = (*context.OBJECTS, *hybrid_tables.OBJECTS)

    def load(self) -> None:
        from memoryd.modes import embed

        # Refuses to start without the extra, or with a model or vocabulary that is not the
        # pinned file, before the index is changed: neither mends itself. The model itself is
        # loaded by the embedding child (embedworker.py), which open() starts without waiting.
        embed.check_extra(model_here=False)
        embed.check_files()

    def create(self, conn: sqlite3.Connection) -> None:
        super().create(conn)
        hybrid_tables.create(conn)

    def drop(self, conn: sqlite3.Connection) -> None:
        hybrid_tables.drop(conn)
        super().drop(conn)

    def rows_added(
        self, conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]
    ) -> None:
        super().rows_added(conn, sources, texts)
        hybrid_tables.rows_added(conn, [row[0] for row in sources])

    def rows_deleted(self, conn: sqlite3.Connection, where: str, params: tuple) -> None:
        super().rows_deleted(conn, where, params)
        hybrid_tables.rows_deleted(conn, where, params)

    def carry_over(self, conn: sqlite3.Connection, old: Path) -> int:
        """Copy from old the vectors of the rows whose text did not change, so the embedder
        computes only what is new. Runs its own transaction (an attached database can only be
        detached outside one). An old file that cannot be read (damaged: the reindex is how it
        is repaired) gives nothing: every vector is computed again, and one line says so."""
        if not old.exists():
            return 0
        try:
            return _carry(conn, old)
        except sqlite3.DatabaseError as error:
            log.warning(
                "index %s: no vectors kept from the old index, which cannot be read (%s);"
                " they are all computed again",
                old,
                error,
            )
            return 0

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        # Without its Live (no vectors loaded) hybrid is context.
        return super().search(conn, query, k)

    def open(self, connect: Connect, name: object) -> Live:
        from memoryd.modes import embedworker, hybrid, progress

        worker = embedworker.Worker()
        progress.register(Path(str(name)), worker)
        live = hybrid.Hybrid(worker.queries, connect, name, worker)
        return _HybridLive(live, worker, _start_behind(worker, name))


def _start_behind(worker, name: object) -> threading.Thread:
    """Start the embedding child (the model, held once, in it) on a thread of its own, so that
    memoryd listens while the model loads: a second or two, and up to START_SECONDS
    (embedprocess.py) for a child that stalls, which no socket must wait for. What stops the start
    was checked before the index was touched (load: the extra, the pinned files); a child killed,
    crashed or stalled while it loads is what the OOM killer or a starved machine does to it
    later too, and is met the same way: logged, recall answers by words and stats says why
    (Worker.fault), and the next batch or question starts another."""

    def run() -> None:
        failed = worker.first_start()
        if failed is not None:
            log.warning(
                "index %s: the embedding process did not load its model at memoryd's start: %s;"
                " recall answers by words until one does, and another is started at the next"
                " batch or question",
                name,
                failed,
            )

    thread = threading.Thread(target=run, name="memoryd-embedding-start", daemon=True)
    thread.start()
    return thread


def _carry(conn: sqlite3.Connection, old: Path) -> int:
    from memoryd.modes import int8

    dbname.attach(conn, old, "old")
    try:
        found = conn.execute("SELECT 1 FROM old.sqlite_master WHERE name = 'vectors'").fetchone()
        if found is None:
            return 0
        conn.execute("BEGIN")
        conn.execute(
            "CREATE TEMP TABLE carried AS SELECT o.kind, o.session, o.record, o.role,"
            " oh.text, ov.vector FROM old.vectors ov JOIN old.sources o ON o.rowid = ov.rowid"
            " JOIN old.hits oh ON oh.rowid = ov.rowid"
            # What int8.unpack can read: anything else is embedded again (damaged.py).
            " WHERE typeof(ov.vector) = 'blob' AND length(ov.vector) IN (?, ?)",
            (int8.DIMENSIONS, int8.FLOAT_BYTES),
        )
        conn.execute("CREATE INDEX temp.carried_key ON carried(session, kind, record, role)")
        before = conn.total_changes
        # The key is not unique: one record's two identical tool calls are two rows with the
        # same text, in either file. Each new row takes one vector (any: their text is the same).
        conn.execute(
            "INSERT INTO vectors SELECT n.rowid, min(c.vector) FROM sources n"
            " JOIN hits nh ON nh.rowid = n.rowid JOIN carried c ON c.session = n.session"
            " AND c.kind = n.kind AND c.record = n.record AND c.role IS n.role"
            " AND c.text = nh.text GROUP BY n.rowid"
        )
        carried = conn.total_changes - before
        conn.execute("DELETE FROM vector_pending WHERE rowid IN (SELECT rowid FROM vectors)")
        conn.execute("DROP TABLE temp.carried")
        conn.execute("COMMIT")
        return carried
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        with contextlib.suppress(sqlite3.Error):
            conn.execute("DROP TABLE IF EXISTS temp.carried")
        conn.execute("DETACH DATABASE old")


class _HybridLive:
    """hybrid's Live: the matrix and embedder thread, and the embedding child they use."""

    def __init__(self, live, worker, starting: threading.Thread) -> None:
        self._live = live
        self._worker = worker
        self._starting = starting  # the child's first start (_start_behind)

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        return self._live.search(conn, query, k)

    def reset(self) -> None:
        self._live.reset()

    def drain(self, timeout: float) -> bool:
        """The child's first start over (loaded or failed), then every row embedded."""
        deadline = time.monotonic() + timeout
        self._starting.join(timeout)
        if self._starting.is_alive():
            return False
        return self._live.drain(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        self._live.close()  # its thread first: no batch is in flight when the child ends
        self._live.matrix.close()
        self._worker.close()  # a child still loading is ended, not waited for
        self._starting.join(CLOSE_JOIN)

    def __getattr__(self, name: str):
        return getattr(self._live, name)  # tests and benchmarks reach the matrix, the counts
