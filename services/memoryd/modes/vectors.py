"""The hybrid mode's vectors in memory: the index's vectors table as one matrix, for exact search.

A reader loads the matrix once, then appends the vectors written since into spare capacity, so a
snapshot taken before stays valid. Within a generation vectors are written in rising rowid order
(the embedder takes the lowest pending rowids first, and a new row's rowid is above every other),
so the highest rowid tells what is new without counting the table; a delete raises
recall_mode.generation, and a changed generation loads the whole table again at once. While the
embedder is writing, new vectors are appended at most every REFRESH_INTERVAL seconds (rows not
in the matrix yet are still found lexically). Beside the matrix, for each row the positions of
its neighbours (two before, two after in the same session), so a row's best neighbour cosine is
one gather.
"""

import sqlite3
import threading
import time
from dataclasses import dataclass

import numpy as np

from memoryd.modes.context import NEIGHBOURS
from memoryd.modes.embed import DIMENSIONS

REFRESH_INTERVAL = 1.0
_ROWS = (
    "SELECT v.rowid, s.kind, s.session, v.vector FROM vectors v"
    " JOIN sources s ON s.rowid = v.rowid WHERE v.rowid > ? ORDER BY v.rowid"
)


def pack(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


@dataclass(frozen=True)
class Snapshot:
    """rowids (n,) rising, vectors (n, 384) float32, neighbours (n, 4) int32 positions, n where
    there is none (so a gather from the cosines with one more value at the end needs no mask)."""

    rowids: np.ndarray
    vectors: np.ndarray
    neighbours: np.ndarray


class Matrix:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._checked = 0.0
        self._clear()

    def _clear(self) -> None:
        self._n = 0
        self._rowids = np.zeros(0, dtype=np.int64)
        self._vectors = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self._groups: list[str] = []
        self._neighbours = np.zeros((0, 2 * NEIGHBOURS), dtype=np.int32)

    def _snapshot(self) -> Snapshot:
        n = self._n
        return Snapshot(self._rowids[:n], self._vectors[:n], self._neighbours)

    def reset(self) -> None:
        with self._lock:
            self._key = None
            self._clear()

    def refresh(self, conn: sqlite3.Connection) -> Snapshot:
        """The matrix of the index conn reads, up to date (or at most REFRESH_INTERVAL old)."""
        with self._lock:
            generation, highest = conn.execute(
                "SELECT (SELECT generation FROM recall_mode), (SELECT max(rowid) FROM vectors)"
            ).fetchone()
            if self._key == (generation, highest):
                return self._snapshot()
            now = time.monotonic()
            if self._key is None or self._key[0] != generation:
                # Rows were deleted (their rowids may be reused): never answer from the old matrix.
                self._clear()
            elif now - self._checked < REFRESH_INTERVAL:
                return self._snapshot()  # only new vectors: they can wait a moment
            self._checked = now
            last = int(self._rowids[self._n - 1]) if self._n else 0
            self._append(conn.execute(_ROWS, (last,)).fetchall())
            self._key = (generation, highest)
            return self._snapshot()

    def _append(self, rows: list[tuple]) -> None:
        if not rows:
            return
        need = self._n + len(rows)
        if need > len(self._rowids):
            # A new buffer: snapshots taken before keep the old one.
            capacity = max(need, 2 * len(self._rowids), 1024)
            rowids = np.zeros(capacity, dtype=np.int64)
            vectors = np.zeros((capacity, DIMENSIONS), dtype=np.float32)
            rowids[: self._n] = self._rowids[: self._n]
            vectors[: self._n] = self._vectors[: self._n]
            self._rowids, self._vectors = rowids, vectors
        new = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4")
        self._vectors[self._n : need] = new.reshape(len(rows), DIMENSIONS)
        self._rowids[self._n : need] = [r[0] for r in rows]
        # A note has no neighbours: its group is its own rowid.
        self._groups += [r[2] if r[1] == "session" else f"#{r[0]}" for r in rows]
        self._n = need
        self._neighbours = neighbours(self._groups)


def neighbours(groups: list[str]) -> np.ndarray:
    """For each position, the positions of the 2 before and 2 after it in its group (in the
    order of the list, which is rowid order), len(groups) where there is none."""
    n = len(groups)
    codes: dict[str, int] = {}
    group = np.array([codes.setdefault(g, len(codes)) for g in groups], dtype=np.int64)
    order = np.lexsort((np.arange(n), group))
    sorted_group = group[order]
    out = np.full((n, 2 * NEIGHBOURS), n, dtype=np.int32)
    shifts = [s for s in range(-NEIGHBOURS, NEIGHBOURS + 1) if s]
    for column, shift in enumerate(shifts):
        at = np.arange(n) + shift
        valid = (at >= 0) & (at < n)
        same = np.zeros(n, dtype=bool)
        same[valid] = sorted_group[at[valid]] == sorted_group[valid]
        out[order[same], column] = order[at[same]]
    return out
