"""The hybrid mode's approximate search once the vectors are many: faiss, product-quantised codes
scanned whole, in memory only.

The exact matrix costs 1.5 KB a row (1.5 GB at a million rows); int8 alone is 384 MB at a million,
which memoryd's 512 MiB container cannot hold beside the model's process. Here each row is 48
bytes (96 parts of 4 dimensions, 4 bits each: faiss's "fast scan" product quantiser, compared
with the query by SIMD table lookups) and every row is scanned: partitioning the rows (IVF) lost
most of the exact top 10 on vectors drawn like the model's unless half the lists were scanned,
and the whole scan of a million codes costs a few milliseconds. The best CANDIDATES by the codes
are scored again from the table's int8 vectors (vectors.around), so the codes need only hold the
true nearest among their first two thousand. faiss, not usearch or sqlite-vec: usearch's HNSW keeps
each vector whole (int8 at best, 384 bytes) beside its graph, and sqlite-vec scans full vectors
in the SQLite file; faiss compresses, adds rows one at a time after training, and is kept up by
Meta (bench/bench_hybrid_scale.py measures latency, memory and the share of the exact top 10).

The index is derived and lives only in memory: a thread of its own builds it from the table
(training on a sample of up to TRAIN_MAX vectors, then adding every vector) as soon as the table
holds ANN_AT rows (looked for from the index's opening on, and again after a reindex, not at
the first recall: until it is built the exact matrix searches only the newest ANN_AT rows by
meaning, which `bxctl memory stats` says), then adds what the embedder writes: the rows above the
highest it holds, and the rows the embedder tells it it wrote below that (below(): after a reindex
or an upgrade's rebuild mid-pass the notes' carried vectors lie above every row still pending, so
each batch is written below them and raises recall_mode.generation); each such raise the embedder
told of is a step it adds rather than builds for. When recall_mode.generation changes otherwise (a
delete took the highest rowid, which a new row may take again), when a tenth of what it holds is
gone, or when the table has grown RETRAIN times past what it was trained on, it builds a new one
beside and swaps it in. A row written while a build reads the table may be added twice (by the build
and by its step): search() answers each rowid once. Nothing is kept on disk, so there is nothing to
damage or to keep in step with the file: a start or a reindex builds it again (bench_hybrid_scale.py
times it; rows not yet in it are still found lexically, and the exact matrix of the newest rows
answers until it is ready). Reading the table holds the index's gate only a chunk at a time.
"""

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable

import numpy as np

from memoryd.modes import annsteps, hybrid_tables
from memoryd.modes.damaged import Damaged
from memoryd.modes.embed import DIMENSIONS
from memoryd.modes.int8 import unpack, unreadable

log = logging.getLogger(__name__)

# From this many vectors on, this index answers, and vectors.py's exact matrix is let go.
ANN_AT = 20_000
# 96 parts of 4 dimensions, 4 bits each: 48 bytes a row, scanned with SIMD lookups ("fast scan").
FACTORY = "PQ96x4fs"
# The quantiser's 16 codes per part want at least 39 points each; more train it better.
TRAIN_MIN = 1_000
TRAIN_MAX = 10_000
RETRAIN = 8
CHUNK = 5_000
POLL = 1.0
# The longest wait before a failed build or add is tried again, in seconds.
PAUSED_MOST = 60.0
# How often the thread counts the table (to see deletes): a count reads every page of it.
COUNT_EVERY = 60.0

Connect = Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]


class Built:
    """One faiss index and what it holds: (generation, highest rowid, rows, trained on)."""

    def __init__(self, index, generation: int, highest: int, rows: int, trained: int):
        self.index = index
        self.generation = generation
        self.highest = highest
        self.rows = rows
        self.trained = trained


def _faiss():
    import faiss

    faiss.omp_set_num_threads(1)  # beside the other recalls, as numpy's BLAS (modes/__init__)
    return faiss


def train(sample: np.ndarray):
    """An empty index trained on sample (float32 unit vectors); rows are added with their rowid."""
    faiss = _faiss()
    codes = faiss.index_factory(DIMENSIONS, FACTORY, faiss.METRIC_INNER_PRODUCT)
    codes.train(np.ascontiguousarray(sample, dtype=np.float32))
    return faiss.IndexIDMap(codes)  # (faiss's wrapper keeps codes alive with the map)


class Ann:
    """The thread that keeps the index, and search() for recall (thread-safe)."""

    def __init__(self, connect: Connect, damaged: Damaged | None = None):
        self._connect = connect
        self._damaged = damaged if damaged is not None else Damaged()
        self._lock = threading.Lock()  # the current index: search and add take turns
        self._built: Built | None = None
        self._epoch = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.building = False
        self._counted = 0.0
        self._below = annsteps.Steps()  # the raises of the generation the embedder told of
        # The ANN_AT a first build (none held) is under way for, else None: stats says that the
        # vector search covers only the newest rows meanwhile (building_first()).
        self._first: int | None = None

    def start(self) -> None:
        """Look for ANN_AT vectors, build the index then and keep it, from now on (vectors.Matrix
        calls this as the index opens)."""
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="memoryd-ann", daemon=True)
                self._thread.start()
        self._wake.set()

    def ready(self) -> bool:
        return self._built is not None

    def building_first(self) -> int | None:
        """The ANN_AT of the table while its first index is being built (none held), else None."""
        return self._first if self._built is None else None

    def rows(self) -> int:
        built = self._built
        return 0 if built is None else built.rows

    def generation(self) -> int | None:
        """The recall_mode.generation the index was built at (None: none built)."""
        built = self._built
        return None if built is None else built.generation

    def search(self, query: np.ndarray, k: int) -> list[int]:
        """The rowids of about the k nearest rows to the unit vector query."""
        with self._lock:
            built = self._built
            if built is None or built.rows == 0:
                return []
            _, ids = built.index.search(np.asarray(query, dtype=np.float32).reshape(1, -1), k)
        return list(dict.fromkeys(int(i) for i in ids[0] if i >= 0))  # a row added twice: once

    def below(self, generation: int, rowids: list[int] | None) -> None:
        """The embedder raised recall_mode.generation to generation by writing the vectors of
        rowids (below vectors already there), in a transaction not yet committed; None: that
        transaction was rolled back. Told before the commit, so the thread never sees the
        generation without knowing why it rose."""
        self._below.told(generation, rowids)

    def reset(self) -> None:
        """The index file was replaced: what was built is of the old one."""
        with self._lock:
            self._epoch += 1
            self._built = None
            self._first = None
        self._below.clear()
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self.keep()
                failures = 0
            except Exception as error:  # noqa: BLE001 - a thread that ended would never build again
                # faiss raises RuntimeError, a damaged index anything; recall meanwhile uses what
                # was built, or the matrix. The same failure is tried again less and less often.
                failures += 1
                log.warning("vector search index: paused: %s: %s", type(error).__name__, error)
            self._wake.wait(
                min(PAUSED_MOST, POLL * 2 ** min(failures - 1, 8)) if failures else POLL
            )
            self._wake.clear()

    def _state(self, count_too: bool, first: bool = False) -> tuple[int, int, int | None]:
        """(generation, highest rowid, count); count None when not counted, or 0 when first
        (nothing built) and the rowids the table spans are fewer than ANN_AT: a count reads
        every page, and the thread looks every POLL until the table is that large."""
        with self._connect() as conn:
            generation, highest, lowest = conn.execute(
                f"SELECT {hybrid_tables.GENERATION},"  # noqa: S608 (a constant)
                " (SELECT coalesce(max(rowid), 0) FROM vectors),"
                " (SELECT coalesce(min(rowid), 1) FROM vectors)"
            ).fetchone()
            count = None
            if first and highest - lowest + 1 < ANN_AT:
                count = 0
            elif count_too:
                (count,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
        return int(generation), int(highest), count

    def keep(self) -> None:
        """One step: build the index when it is missing or stale, else add the new vectors."""
        epoch = self._epoch
        built = self._built
        now = time.monotonic()
        count_too = built is None or now - self._counted >= COUNT_EVERY
        generation, highest, count = self._state(count_too, built is None)
        if count is not None:
            self._counted = now
        stale = built is None
        if built is not None and built.generation != generation:
            stale = not self._step(built, generation, epoch)
        if built is not None and count is not None:
            stale = stale or built.rows - count > built.rows // 10
            stale = stale or count > RETRAIN * built.trained
        if built is None:
            wanted = int(count or 0) >= ANN_AT
            self._first = ANN_AT if wanted else None
            if not wanted:
                return  # the exact matrix holds every vector
        if stale:
            if count is None:
                generation, highest, count = self._state(True)
            fresh = self._build(generation, int(count or 0), built)
            with self._lock:
                if epoch == self._epoch and fresh is not None:
                    self._built = fresh
            self._below.drop(fresh.generation if fresh is not None else generation)
            return
        if built is not None and highest > built.highest:
            self._add(built, epoch)

    def _step(self, built: Built, generation: int, epoch: int) -> bool:
        """Add the rows the embedder wrote below what built holds, from built's generation up
        to generation, when below() told of every raise between; False (build again) when it
        did not: rows were deleted, or a rowid may hold another row now."""
        steps = self._below.take(built.generation, generation)
        if steps is None:
            return False
        # Rows above what built holds are added with the others above it (_add).
        rowids = sorted({r for r in steps if r <= built.highest})
        for rows in annsteps.read(self._connect, rowids):
            vectors = unpack([r[1] for r in rows])
            self._damaged.note(rows[i][0] for i in unreadable(vectors))
            with self._lock:
                if epoch != self._epoch or self._built is not built:
                    return True  # replaced meanwhile: the next step looks again
                built.index.add_with_ids(vectors, np.array([r[0] for r in rows], dtype=np.int64))
                built.rows += len(rows)
        with self._lock:
            if epoch == self._epoch and self._built is built:
                built.generation = generation
        return True

    def _chunks(self, after: int, upto: int | None = None):
        """(rowids, unit vectors) of the table above rowid after, CHUNK at a time; each chunk
        read under the gate on its own."""
        while not self._stop.is_set():
            with self._connect() as conn:
                rows = conn.execute(
                    "SELECT rowid, vector FROM vectors WHERE rowid > ? AND rowid <= ?"
                    " ORDER BY rowid LIMIT ?",
                    (after, upto if upto is not None else 2**62, CHUNK),
                ).fetchall()
            if not rows:
                return
            vectors = unpack([r[1] for r in rows])
            self._damaged.note(rows[i][0] for i in unreadable(vectors))
            yield np.array([r[0] for r in rows], dtype=np.int64), vectors
            after = rows[-1][0]

    def _sample(self, count: int) -> np.ndarray:
        wanted = min(count, TRAIN_MAX)
        step = max(1, count // max(wanted, 1))
        with self._connect() as conn:
            blobs = [
                b
                for (b,) in conn.execute(
                    "SELECT vector FROM (SELECT vector, row_number() OVER (ORDER BY rowid) AS n"
                    " FROM vectors) WHERE n % ? = 0 LIMIT ?",
                    (step, wanted),
                )
            ]
        sample = unpack(blobs)
        return np.delete(sample, unreadable(sample), axis=0)  # not vectors: nothing to learn

    def _build(self, generation: int, count: int, old: Built | None) -> Built | None:
        faiss = _faiss()
        self.building = True
        try:
            if old is not None and count <= RETRAIN * old.trained:
                index = faiss.clone_index(old.index)
                index.reset()  # the trained lists and codebooks, no rows
                trained = old.trained
            else:
                sample = self._sample(count)
                if len(sample) < TRAIN_MIN:  # too few for the product quantiser's codes
                    return None
                index, trained = train(sample), count
            highest, rows = 0, 0
            for rowids, vectors in self._chunks(0):
                index.add_with_ids(vectors, rowids)
                highest, rows = int(rowids[-1]), rows + len(rowids)
            log.info("vector search index: built over %d vectors", rows)
            return Built(index, generation, highest, rows, trained)
        finally:
            self.building = False

    def _add(self, built: Built, epoch: int) -> None:
        for rowids, vectors in self._chunks(built.highest):
            with self._lock:
                if epoch != self._epoch or self._built is not built:
                    return
                built.index.add_with_ids(vectors, rowids)
                built.highest = int(rowids[-1])
                built.rows += len(rowids)
