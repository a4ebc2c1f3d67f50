"""The hybrid mode: context's ranking fused with exact cosine search over sentence embeddings.

Fusion (fusion.py): bm25 of context's top LEXICAL_DEPTH divided by the most the query could
score (lexbound.py: how much of the question's weight a row holds, not how it ranks among the
lexical hits), and each record's cosine plus its best neighbour's cosine at NEIGHBOUR_WEIGHT,
over the best of the dense top DENSE_DEPTH; LEXICAL_WEIGHT and DENSE_WEIGHT of them over the
union of the lists, the rows of the speaker a question names raised (addressed.py), then arranged
as context's are (the spec's best rows kept near the top, the agent's own calls last, session runs
damped: arrange.py). The dense part has a third of the
lexical part's weight and is not stretched over its whole range: on real conversations a
sentence vector finds the evidence less often than the words do (on two LoCoMo conversations,
0.59 of questions in its top 5 against 0.75), so it decides between rows the words rank alike
and brings in what the words miss, without reordering a confident lexical list. The question
is embedded without the names that carry no meaning for it (names.py): as typed, its vector
lands on the turns that greet the person it names. Divisor and weights were chosen on generated
conversations of four shapes and on public conversations (bench/fusion_sweep.py), and hold over
a wide range: any weight of the dense part from 0.15 to 0.35 of the lexical's scores within a
question or two of the chosen one on each. A record without a vector yet (the background
embedder has not reached it) competes on its lexical part alone.

The embedder runs on its own thread: it takes the pending rowids in rowid order, a batch at a
time (each text cut to what the model reads), computes their vectors outside any transaction of
the writer's, and writes them; a batch that fails is split down to the row that fails, which is
skipped (embedbatch.py). It reads the batch and writes its vectors under the index's shared
gate, but computes them outside it: a reindex's swap, and the recalls that wait for a swap,
never wait for the embedding child (which may be slow to answer, or never answer:
embedworker.py). What it writes is checked against the file as it is then: a row whose text is
not the one embedded (the file was swapped meanwhile) is left pending. A start or a reindex
never waits for it, nor does memoryd's stop, beyond CLOSE_GRACE.
"""

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from memoryd.index import carryfile
from memoryd.modes import (
    addressed,
    arrange,
    context,
    damaged,
    embedbatch,
    fusion,
    names,
    progress,
)
from memoryd.modes.embed import Embeds
from memoryd.modes.lexbound import TermCounts
from memoryd.modes.vectors import Matrix, Snapshot
from memoryd.search.hit import Hit
from memoryd.search.query import Query

log = logging.getLogger(__name__)

# Lexical candidates read, at least (4 k when more). A deeper list changes little of the top 10
# (reading 40 rather than 100 changed 4 of the 2,138 answers at @5 and @10 over the sweep's
# 1,069 questions, 3 of them for the better: fusion_sweep.py), and the exact top k of a
# whole-sentence question costs more the deeper it reads.
LEXICAL_DEPTH = 40
# The rows the lexical half and the spec's part rank at most (search/budgeted.py) when their
# exact top k would rank more: at a million records a question's common words (a stopword, a
# year in the date column) hold hundreds of thousands of rows, and FTS5 pays for each row it
# scores. The rarest words' rows are ranked and the best of them scored exactly, the common
# words included; when the rarer words give too few rows, the newest rows of the rarest common
# word fill the list. A row those words alone would lift into the top k may be passed over
# (bench/bench_hybrid_scale.py measures how often). In a table of at most
# budgeted.EXACT_ROWS rows the budget is not used: the lists are exact there. 10,000 rather than
# 15,000 rows (and budgeted.SCORED_MOST 256 rather than 512): at a million records p99 131 and
# 135 ms against 170 and 187, alternated on one machine, with the same share of the exact top 5
# (0.962 against 0.963) and less of the exact top 10 (0.88 against 0.93).
READ_BUDGET = 10_000
DENSE_DEPTH = 100
# The lexical part's divisor: "best" (the best row's bm25) or "bound" (lexbound.py).
DIVISOR = "bound"
LEXICAL_WEIGHT = 0.75
# The spec's ranking adds nothing to the score here: its best rows are kept by KEEP_SPEC, and as
# a part of the score it only repeated what the lexical part says (fusion_sweep.py).
SPEC_WEIGHT = 0.0
DENSE_WEIGHT = 0.25
# The dense part over its best row ("best"), not min-maxed (fusion.add_dense).
DENSE_NORM = "best"
# A row only the dense part proposes is a candidate when its own cosine with the question is
# above DENSE_FLOOR, or above DENSE_FLOOR_ALONE when no word of the question found a row, and
# the part adds nothing when no row of its top is (fusion.add_dense): so a question whose words
# memory never held, and that means nothing it holds, is answered "(no matches ...)". Each is
# the highest that cost no question of the evaluation (BENCHMARKS.md, recall modes); higher,
# answers said in other words inside a longer turn are lost (0.22 alone lost one question of
# the agent shape), while unrelated words reach 0.24: a word never held that lands that near
# a record is still answered with it.
DENSE_FLOOR = 0.15
DENSE_FLOOR_ALONE = 0.2
# The spec's own best rows are at these positions or better (arrange.keep_spec).
KEEP_SPEC = (2, 4, 7, 9)
NEIGHBOUR_WEIGHT = 0.5
EMBED_BATCH = embedbatch.EMBED_BATCH  # the most rows a batch takes (benchmarks read it here)
# Threads that embed questions and scan the ANN beside recalls ranking words: as many as
# memoryd's readers, so no recall waits for another's.
AHEAD_THREADS = 4
# How often an idle embedder looks for pending rows, in seconds (catch-up does not wake it).
POLL = 2.0
# The longest wait before a failed batch is tried again, in seconds.
PAUSED_MOST = 60.0
# How long close() lets a batch in flight finish (and its vectors be kept) before it ends the
# embedding child, in seconds: a batch takes 2 s on a busy 2-core machine.
CLOSE_GRACE = 2.0

CARRYING = progress.CARRYING

Connect = Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]


def dense_scores(matrix: Snapshot, query_vector: np.ndarray) -> np.ndarray:
    """Each row's cosine with the query plus NEIGHBOUR_WEIGHT x its best neighbour's."""
    return dense_parts(matrix, query_vector)[0]


def dense_parts(matrix: Snapshot, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dense_scores, and each row's own cosine with the query (what DENSE_FLOOR is over)."""
    n = len(matrix.rowids)
    padded = np.empty(n + 1, dtype=np.float32)
    np.matmul(matrix.vectors, query_vector, out=padded[:n])
    padded[n] = -np.inf  # where a row has no neighbour
    best = padded[matrix.neighbours].max(axis=1)
    best[best == -np.inf] = 0.0
    return padded[:n] + NEIGHBOUR_WEIGHT * best, padded[:n]


def fuse(
    lexical: list[tuple[int, float]],
    bound: float,
    spec: list[int],
    rowids: np.ndarray,
    scores: np.ndarray,
    cosines: np.ndarray | None = None,
) -> dict[int, float]:
    """Each candidate's score (higher is better): the lexical list (rowid, bm25 best first;
    FTS5's bm25 is negative) over DIVISOR, the spec's ranking (rowids best first) and the dense
    top DENSE_DEPTH of scores (over rowids), weighed (fusion.py); with cosines (each row's own,
    over rowids), a row the dense part alone proposes only above its floor. bound: the most
    bm25 the query could score (positive), used when DIVISOR is "bound"."""
    combined: dict[int, float] = {}
    fusion.add_lexical(combined, lexical, LEXICAL_WEIGHT, bound if DIVISOR == "bound" else 0.0)
    fusion.add_spec(combined, spec, SPEC_WEIGHT)
    fusion.add_dense(
        combined,
        rowids,
        scores,
        DENSE_WEIGHT,
        DENSE_DEPTH,
        DENSE_NORM,
        cosines,
        DENSE_FLOOR,
        DENSE_FLOOR_ALONE,
    )
    return combined


class Hybrid:
    """The hybrid mode of one Index: its matrix, its embedder thread."""

    def __init__(self, embedder: Embeds, connect: Connect, name: object = "index", worker=None):
        self.embedder = embedder
        self.worker = worker or embedder  # the background batches (modes/embedworker.py)
        self.matrix = Matrix(connect)
        self.counts = TermCounts()
        self.speakers = addressed.Speakers()
        self._connect = connect
        self._name = name
        self._path = Path(str(name))
        self.batches = embedbatch.Batches()
        progress.watch(name, self.batches)
        if self.matrix.ann is not None:
            progress.watch_ann(name, self.matrix.ann)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memoryd-embedder", daemon=True)
        self._thread.start()
        self._ahead = ThreadPoolExecutor(AHEAD_THREADS, thread_name_prefix="memoryd-dense")

    # --- recall ---------------------------------------------------------------------------------
    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        terms = context.query_terms(query)
        conn.execute("BEGIN")
        try:
            text = names.dense_text(conn, self.counts, query.text)
            embed = lambda: self.embedder.embed([text])[0]  # noqa: E731
            # Once the ANN answers, the question is embedded and the ANN scanned on a thread of
            # their own while this one ranks the words (vectors.Matrix.propose): at a million
            # records p50 / p99 70 / 109 ms against 75 / 115, three rounds alternated, the
            # same answers; at 100,000, 37 / 92 against 43 / 99 (on a busy machine at 30,000
            # it gained nothing: 32.3 against 31.4 ms p50, alternated).
            ahead = None
            if self.matrix.ann_ready():
                with contextlib.suppress(RuntimeError):  # closing: this thread embeds it
                    ahead = self._ahead.submit(self.matrix.propose, embed)
            lexical = context.ranked(conn, terms, max(LEXICAL_DEPTH, 4 * k), READ_BUDGET)
            bound = self.counts.bound(conn, terms) if lexical and DIVISOR == "bound" else 0.0
            spec = context.spec_ranked(conn, query, context.SPEC_DEPTH, READ_BUDGET)
            rowids, scores, cosines = self._dense(conn, embed, ahead)
            combined = fuse(lexical, bound, spec, rowids, scores, cosines)
            # The spec's rows are placed even when its part adds nothing: keep_spec needs them.
            where = arrange.places(conn, [*combined, *spec])
            asked = addressed.asked_role(conn, query.text, self.speakers)
            if asked is not None:
                addressed.favour(combined, where, asked)
            order = arrange.arrange(combined, where, k)
            order = context.keep(order, spec, where, query, KEEP_SPEC, k)
            return context.hits(conn, order, terms)
        finally:
            conn.execute("COMMIT")

    def _dense(
        self, conn: sqlite3.Connection, embed: Callable[[], np.ndarray], ahead: Future | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rowids, scores, cosines) of the rows the vector search proposes (every row below 20,000
        vectors, the ANN's candidates above, proposed ahead when it was ready), for the question
        less its common names (names.py), which embed() embeds. No scores when the question
        cannot be embedded: recall answers from the words."""
        proposed = ahead.result() if ahead is not None else None
        if proposed is not None:
            matrix, vector = self.matrix.settle(conn, proposed)
        else:  # the exact matrix answers (or the ANN was let go meanwhile: a reindex)
            matrix, vector = self.matrix.near(conn, embed)
        if vector is None or not len(matrix.rowids):
            none = np.zeros(0, dtype=np.float32)
            return np.zeros(0, dtype=np.int64), none, none
        return (matrix.rowids, *dense_parts(matrix, vector))

    # --- the embedder ---------------------------------------------------------------------------
    def wake(self) -> None:
        self._idle.clear()
        self._wake.set()

    def reset(self) -> None:
        """The index file was replaced: load the matrix again, look for pending rows."""
        self.matrix.reset()
        self.counts.clear()
        self.speakers.clear()
        self.batches.reset()
        self.wake()

    def drain(self, timeout: float) -> bool:
        """Wait until no row is pending (tests, benchmarks); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            self.wake()
            if not self._idle.wait(max(0.0, deadline - time.monotonic())):
                return False
            with self._connect() as conn:
                (left,) = conn.execute("SELECT count(*) FROM vector_pending").fetchone()
            if left == 0:
                return True

    def stop_embedder(self) -> None:
        """Stop the background thread (close; benchmarks that drive step() themselves)."""
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def close(self) -> None:
        """Stop the thread, ending the embedding child (end()) if its batch is not done within
        CLOSE_GRACE: a child that does not answer must not hold memoryd's stop."""
        self._stop.set()
        self._wake.set()
        self._thread.join(CLOSE_GRACE)
        if self._thread.is_alive():
            end = getattr(self.worker, "end", None)  # an Embedder in this process has none
            if end is not None:
                end()
            self._thread.join()
        self._ahead.shutdown(wait=True)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                done = self.step()
                failures = 0
            except Exception as error:  # noqa: BLE001 - a thread that ended would embed no more
                # A full disk, the child gone or silent (WorkerFailed), a damaged index: the same
                # failure is tried again less and less often; recall finds the rows by words
                # meanwhile; a batch split in two is tried again at the next poll (embedbatch.py).
                # Stopping (the child ended by close) is no failure.
                if self._stop.is_set():
                    break
                self.batches.paused = embedbatch.one_line(error)
                split, self.batches.split = self.batches.split, False
                failures += 0 if split else 1
                log.warning(
                    "index %s: embedding paused: %s: %s", self._name, type(error).__name__, error
                )
                done = 0
                self._stop.wait(
                    0.0 if split else min(PAUSED_MOST, POLL * 2 ** min(failures - 1, 8))
                )
            if done == 0:
                self._idle.set()
                self._wake.wait(POLL)
                self._wake.clear()

    def step(self) -> int:
        """Embed one batch of pending rows; returns how many were taken. Stored vectors found
        unreadable since the last step are put back on the pending list first (damaged.py).
        The batch is computed outside the gate (the module docstring); one that fails is split
        down to the row that fails, which is skipped (embedbatch.py)."""
        if carryfile.waiting(self._path):
            # Rows the catch-up adds take the vectors kept from the index this one replaced;
            # what is left is embedded once it is done, in one pass (index/carryfile.py). Only
            # memoryd's own file there counts: anything else put at its name is not waited for.
            self.batches.paused = CARRYING
            return 0
        if self.batches.paused == CARRYING:
            self.batches.paused = None
        with self._connect() as conn:
            self._embed_damaged_again(conn)
            rows = self.batches.take(conn)
        if not rows:
            return 0
        # A text edited by hand into a number is embedded as nothing (the child takes text).
        try:
            vectors = self.worker.embed([text if isinstance(text, str) else "" for _, text in rows])
        except Exception as error:
            failed = self.batches.failed([rowid for rowid, _ in rows], error)
            if not failed or not embedbatch.works(self.worker):
                raise
            with self._connect() as conn:
                self.batches.skip(conn, rows[0], self._name)
            return 1
        ann = self.matrix.ann
        with self._connect() as conn:
            self.batches.write(conn, rows, vectors, ann.below if ann is not None else None)
        return len(rows)

    def _embed_damaged_again(self, conn: sqlite3.Connection) -> None:
        rowids = self.matrix.damaged.take()
        if not rowids:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            deleted = damaged.embed_again(conn, rowids)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self.matrix.damaged.note(rowids)  # taken again at the next step
            raise
        if deleted:
            log.warning(
                "index %s: %d stored vectors could not be read (damaged, or edited by hand);"
                " their rows are found by their words until they are embedded again",
                self._name,
                deleted,
            )
