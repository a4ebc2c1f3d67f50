"""The hybrid mode's vectors: int8 in the index file, searched exactly while few, by ANN when many.

Each vector is stored as 384 int8 (its largest component scaled to 127: a cosine is scale-free,
so no scale is kept), a quarter of float32; a vector written as float32 by an older memoryd is
read as well. The dense half of a recall asks near() for a Snapshot: the rows it scores, their
unit vectors, and the positions of each row's neighbours (two before, two after in the same
session, the agent's own recall and memory calls left out, as context's neighbour column leaves
them) among them, which hybrid.dense_scores turns into scores.

Below ANN_AT vectors the Snapshot is the whole table, as one matrix kept in memory and appended to
(exact search; the matrix costs 1.5 KB a row, 30 MB at 20,000). Above, until ann.py's index is
built (its thread looks for ANN_AT vectors from the index's opening on, and builds again after a
reindex), the matrix holds the newest ANN_AT rows, the oldest let go as new ones come: the rows a
recall most likely wants are the recent ones, which a matrix of the first rows left to their words
alone. From ANN_AT on, once built, ann.py's index
(faiss product-quantised codes, 48 bytes a row in memory) proposes CANDIDATES rows; their int8
vectors are read back from the table and the best POOL by exact cosine kept, with the rows around
each in its session; a pool row's neighbours are then exactly the table's, and a row brought in as
a neighbour knows only the neighbours that were brought in with it.

In the matrix, within a generation vectors are written in rising rowid order (the embedder takes
the lowest pending rowids first, and a new row's rowid is above every other), so the highest
rowid tells what is new; recall_mode.generation rises when a vector may be written below one
already there (hybrid_tables.py), and then the matrix loads the whole table again. When the
file's count of deletions has risen (any delete of rows), the matrix drops the rows no longer in
the table before the next recall scores with it, and finds each row's neighbours again.
"""

import logging
import sqlite3
import threading
import time
from dataclasses import dataclass

import numpy as np

from memoryd.errors import StartFailed
from memoryd.modes import ann, arrange, hybrid_tables
from memoryd.modes.context import NEIGHBOURS
from memoryd.modes.damaged import Damaged
from memoryd.modes.embed import DIMENSIONS
from memoryd.modes.int8 import unpack, unreadable
from memoryd.search.schema import DELETIONS_PRAGMA

log = logging.getLogger(__name__)

REFRESH_INTERVAL = 1.0
# Rows the ANN proposes, and rows kept from them by exact cosine (each with its neighbours).
CANDIDATES = 2_000
POOL = 100
# Rowids read on each side of a pool row to find its neighbours in one query.
WINDOW = 8
# Whether a row is the agent's own recall or memory call, which is no row's neighbour and has
# none (arrange.own_call): its words must not raise the turns beside it. Over sources s; the
# text is read only for a call's row (a row whose hits row is missing is not one).
_OWN = arrange.own_call_sql(
    "s.role", "coalesce((SELECT h.text FROM hits h WHERE h.rowid = s.rowid), '')"
)
_ROWS = (
    f"SELECT v.rowid, s.kind, s.session, v.vector, {_OWN} FROM vectors v"
    " JOIN sources s ON s.rowid = v.rowid WHERE v.rowid > ? ORDER BY v.rowid DESC LIMIT ?"
)
# What the exact matrix is kept up with: recall_mode.generation, the file's count of deletions
# (raised by every delete of rows, in its transaction: schema.DELETIONS_PRAGMA, a header field
# read at no cost) and the highest rowid with a vector.
_KEY = (
    f"SELECT {hybrid_tables.GENERATION}, (SELECT * FROM pragma_{DELETIONS_PRAGMA}),"
    " (SELECT max(rowid) FROM vectors)"
)
_BEFORE = (
    "SELECT s.rowid FROM sources s WHERE s.session = ?"
    f" AND s.kind = 'session' AND NOT {_OWN} AND s.rowid < ? ORDER BY s.rowid DESC LIMIT ?"
)
_AFTER = (
    "SELECT s.rowid FROM sources s WHERE s.session = ?"
    f" AND s.kind = 'session' AND NOT {_OWN} AND s.rowid > ? ORDER BY s.rowid LIMIT ?"
)


@dataclass(frozen=True)
class Snapshot:
    """rowids (n,), vectors (n, 384) float32 unit vectors, neighbours (n, 4) int32 positions, n
    where there is none (so a gather from the cosines with one more value at the end needs no
    mask)."""

    rowids: np.ndarray
    vectors: np.ndarray
    neighbours: np.ndarray


EMPTY = Snapshot(
    np.zeros(0, dtype=np.int64),
    np.zeros((0, DIMENSIONS), dtype=np.float32),
    np.zeros((0, 2 * NEIGHBOURS), dtype=np.int32),
)


class Matrix:
    """The dense half's rows: the exact matrix, or the ANN (ann.Ann) once the table is large."""

    def __init__(self, connect=None) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._checked = 0.0
        self._clear()
        self.damaged = Damaged()  # stored vectors that could not be read (damaged.py)
        self.ann = None
        if connect is not None:
            self.ann = ann.Ann(connect, self.damaged)
            self.ann.start()  # built as soon as the table is large, not at the first recall

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
        """The index file was replaced."""
        with self._lock:
            self._key = None
            self._clear()
        if self.ann is not None:
            self.ann.reset()

    def close(self) -> None:
        if self.ann is not None:
            self.ann.close()

    def near(self, conn: sqlite3.Connection, embed_query) -> tuple[Snapshot, np.ndarray | None]:
        """The rows the dense half scores, and the query's unit vector (embed_query(), called
        only when there are vectors): all of them while the table is small, else the ANN's
        candidates, their best POOL and the neighbours of those."""
        proposed = self.propose(embed_query)
        if proposed is not None:
            return self.settle(conn, proposed)
        matrix = self.refresh(conn)
        if not len(matrix.rowids):
            return matrix, None
        query = _embedded(embed_query)
        return (EMPTY, None) if query is None else (matrix, query)

    def ann_ready(self) -> bool:
        return self.ann is not None and self.ann.ready()

    def propose(self, embed_query) -> tuple[list[int], np.ndarray | None] | None:
        """Once the ANN answers: the ANN's candidates and the question's vector (no candidates
        and None when it could not be embedded); None while the exact matrix answers. Reads
        nothing of the index file, so it may run on another thread beside the lexical half:
        the question's embedding (another process) and faiss's scan (which releases the
        interpreter) then take the second core."""
        if self.ann is None or not self.ann.ready():
            return None
        with self._lock:
            if self._n:
                self._clear()  # the ANN answers now: let the matrix go
                self._key = None
        query = _embedded(embed_query)
        if query is None:
            return [], None
        return self.ann.search(query, CANDIDATES), query

    @staticmethod
    def settle(
        conn: sqlite3.Connection, proposed: tuple[list[int], np.ndarray | None]
    ) -> tuple[Snapshot, np.ndarray | None]:
        """near()'s answer from propose()'s: the candidates' Snapshot read from the index."""
        candidates, query = proposed
        if query is None:
            return EMPTY, None
        return around(conn, candidates, query), query

    def refresh(self, conn: sqlite3.Connection) -> Snapshot:
        """The exact matrix of the index conn reads, up to date (or at most REFRESH_INTERVAL
        old), holding the newest ANN_AT rows at most (the ANN takes over once built)."""
        with self._lock:
            key = conn.execute(_KEY).fetchone()
            if self._key == key:
                return self._snapshot()
            generation, deletions, _highest = key
            now = time.monotonic()
            if self._key is None or self._key[0] != generation:
                # A vector may have been written below the highest: load it all again.
                self._clear()
            elif self._key[1] != deletions:
                # Rows were deleted (a forget, a rewritten log): their vectors must not answer,
                # nor be a neighbour's, from the next recall on.
                self._drop_deleted(conn)
            elif now - self._checked < REFRESH_INTERVAL:
                return self._snapshot()  # only new vectors: they can wait a moment
            self._checked = now
            self._load(conn)
            if self._n < ann.ANN_AT and self._n != self._count(conn):
                self._clear()  # rows were deleted too: their vectors must not answer
                self._load(conn)
            self._key = key
            return self._snapshot()

    def _load(self, conn: sqlite3.Connection) -> None:
        """Append the vectors above the highest held, the newest ANN_AT of them at most."""
        last = int(self._rowids[self._n - 1]) if self._n else 0
        rows = conn.execute(_ROWS, (last, ann.ANN_AT)).fetchall()[::-1]
        if len(rows) >= ann.ANN_AT:
            self._clear()  # all of them newer than every row held
        self._append(rows)

    def _drop_deleted(self, conn: sqlite3.Connection) -> None:
        """Keep only the rows still in the table, with each row's neighbours found again among
        them: the matrix a load from the table gives, without reading the vectors again."""
        n = self._n
        if not n:
            return
        first, last = int(self._rowids[0]), int(self._rowids[n - 1])
        there = np.fromiter(
            (
                r
                for (r,) in conn.execute(
                    "SELECT rowid FROM vectors WHERE rowid BETWEEN ? AND ?", (first, last)
                )
            ),
            dtype=np.int64,
        )
        kept = np.flatnonzero(np.isin(self._rowids[:n], there))
        if len(kept) == n:
            return
        # New buffers: snapshots taken before keep the old ones.
        self._rowids = self._rowids[kept]
        self._vectors = self._vectors[kept]
        self._groups = [self._groups[i] for i in kept]
        self._n = len(kept)
        self._neighbours = neighbours(self._groups)

    @staticmethod
    def _count(conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def _append(self, rows: list[tuple]) -> None:
        """Append rows (in rising rowid order), letting the oldest held go past ANN_AT."""
        if not rows:
            return
        drop = max(0, self._n + len(rows) - ann.ANN_AT)
        if drop or self._n + len(rows) > len(self._rowids):
            # A new buffer: snapshots taken before keep the old one.
            kept = self._n - drop
            capacity = min(max(kept + len(rows), 2 * len(self._rowids), 1024), ann.ANN_AT)
            rowids = np.zeros(capacity, dtype=np.int64)
            vectors = np.zeros((capacity, DIMENSIONS), dtype=np.float32)
            rowids[:kept] = self._rowids[drop : self._n]
            vectors[:kept] = self._vectors[drop : self._n]
            self._rowids, self._vectors = rowids, vectors
            self._groups = self._groups[drop:]
            self._n = kept
        need = self._n + len(rows)
        vectors = unpack([r[3] for r in rows])
        self.damaged.note(rows[i][0] for i in unreadable(vectors))
        self._vectors[self._n : need] = vectors
        self._rowids[self._n : need] = [r[0] for r in rows]
        # A note, or the agent's own call, has no neighbours: its group is its own rowid.
        self._groups += [r[2] if r[1] == "session" and not r[4] else f"#{r[0]}" for r in rows]
        self._n = need
        self._neighbours = neighbours(self._groups)


def around(conn: sqlite3.Connection, candidates: list[int], query: np.ndarray) -> Snapshot:
    """The Snapshot of the POOL candidates of highest exact cosine (their vectors read from the
    table: a row deleted since the ANN saw it is gone) and of the rows around each."""
    if not candidates:
        return EMPTY
    found = _rows(conn, candidates, with_sources=False)
    if not found:
        return EMPTY
    cosine = unpack([r[1] for r in found]) @ query
    pool = [found[i][0] for i in np.argsort(-cosine, kind="stable")[:POOL]]
    # The rows of a session are mostly consecutive rowids (a log is indexed a part at a time):
    # one read of the rows within WINDOW of each pool row finds most neighbours; a pool row
    # whose session is interleaved with others there has its own two queries.
    nearby = {r for rowid in pool for r in range(rowid - WINDOW, rowid + WINDOW + 1)}
    # The session of each row read that is a session's turn (a note, or the agent's own call,
    # has no neighbours).
    turns = {r[0]: r[3] for r in _rows(conn, sorted(nearby), any_row=True) if r[2] == "session"}
    following: dict[int, int] = {}
    for rowid in pool:
        session = turns.get(rowid)
        if session is None:
            continue  # a note (no neighbours), or a row deleted since its vector was read
        same = [r for r in range(rowid - WINDOW, rowid + WINDOW + 1) if turns.get(r) == session]
        at = same.index(rowid)
        before, after = same[max(0, at - NEIGHBOURS) : at], same[at + 1 : at + 1 + NEIGHBOURS]
        if len(before) < NEIGHBOURS and rowid - WINDOW > 0:
            before = [r for (r,) in conn.execute(_BEFORE, (session, rowid, NEIGHBOURS))][::-1]
        if len(after) < NEIGHBOURS:
            after = [r for (r,) in conn.execute(_AFTER, (session, rowid, NEIGHBOURS))]
        run = [*before, rowid, *after]
        following.update(zip(run, run[1:], strict=False))
    vectors = {r[0]: r[1] for r in found}
    wanted = sorted({*following, *following.values()} - vectors.keys())
    vectors.update((r[0], r[1]) for r in _rows(conn, wanted, with_sources=False))
    kept = sorted(set(pool) | ({*following, *following.values()} & vectors.keys()))
    position = {rowid: i for i, rowid in enumerate(kept)}
    preceding = {b: a for a, b in following.items()}
    n = len(kept)
    table = np.full((n, 2 * NEIGHBOURS), n, dtype=np.int32)
    for i, rowid in enumerate(kept):
        for side, links in ((0, preceding), (NEIGHBOURS, following)):
            link: int | None = rowid
            for step in range(NEIGHBOURS):
                link = links.get(link) if link is not None else None
                if link is None:
                    break
                if link in position:  # a neighbour without a vector yet counts as none
                    column = side + (NEIGHBOURS - 1 - step if side == 0 else step)
                    table[i, column] = position[link]
    return Snapshot(np.array(kept, dtype=np.int64), unpack([vectors[r] for r in kept]), table)


_unembedded_said: list[str] = []  # the last reason logged: a model that stays broken is said once


def _embedded(embed_query) -> np.ndarray | None:
    """The question's vector; None when it cannot be embedded (the embedding process failed
    twice, or cannot start: its model file damaged or missing), so that recall answers from its
    lexical half alone rather than not at all. The reason is logged when it changes."""
    from memoryd.modes.embedworker import WorkerFailed

    try:
        vector = embed_query()
    except (WorkerFailed, StartFailed) as error:
        said = str(error)
        if _unembedded_said != [said]:
            log.warning("recall: the question was not embedded, answering by words alone: %s", said)
            _unembedded_said[:] = [said]
        return None
    _unembedded_said.clear()
    return vector


def _rows(
    conn: sqlite3.Connection,
    rowids: list[int],
    *,
    with_sources: bool = True,
    any_row: bool = False,
) -> list[tuple]:
    """(rowid, vector, kind, session) of rowids, in parts of at most 900 (SQLite's bound
    parameters); any_row: rows of sources with or without a vector (vector then None)."""
    if any_row:
        # The agent's own calls read as no turn (kind "own"): they are nobody's neighbour.
        sql = (
            f"SELECT s.rowid, NULL, CASE WHEN {_OWN} THEN 'own' ELSE s.kind END, s.session"
            " FROM sources s WHERE s.rowid IN ({})"
        )
    elif with_sources:
        sql = (
            "SELECT v.rowid, v.vector, s.kind, s.session FROM vectors v JOIN sources s"
            " ON s.rowid = v.rowid WHERE v.rowid IN ({})"
        )
    else:
        sql = "SELECT rowid, vector, NULL, NULL FROM vectors WHERE rowid IN ({})"
    out: list[tuple] = []
    for start in range(0, len(rowids), 900):
        part = rowids[start : start + 900]
        out += conn.execute(sql.format(",".join("?" * len(part))), part).fetchall()
    return out


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
