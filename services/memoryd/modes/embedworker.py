"""The hybrid mode's model in a process of its own: the background embedding on every core, and
the questions of recall on a channel of their own. This is memoryd's side, which asks the child
(embedchild.py) within deadlines; embedprocess.py starts, restarts and ends it.

The first embedding pass over a large history is pure computation. On one of memoryd's threads it
got one core (recall wants onnxruntime single-threaded beside the other calls), and the rest of
memoryd shared that interpreter with it; in a child, the groups of a batch run side by side, one
thread each, on all the cores the machine gives memoryd (embed.Embedder: one copy of the model,
onnxruntime's run releases the interpreter lock). The model is held once, in the child (about
150 MB resident once loaded, 190 to 230 while it embeds, minilm_graph.py), and memoryd does not
load it at all. memoryd's embedder thread
hands a batch of texts to the child on its stdin and waits for the answer on its stdout, holding
neither the interpreter lock nor a transaction; the event loop and the writer never wait on it.
A recall's question goes over a socket of its own to another thread of the child, which runs
beside the batch in flight (onnxruntime's run is thread-safe), so a recall never queues behind a
batch.

Both channels carry frames: a 4-byte big-endian length, then msgpack (a list of texts; the answer
{"vectors": float32 bytes} or {"error": text}); the child's first frame on stdout is {"ready":
true}, or {"error": ...} when the extra or the pinned model is missing, which memoryd reports as
the reason it cannot start. The child exits at the end of either channel, so it never outlives
memoryd, even one killed with SIGKILL (as the reindex's child, index/rebuild.py). A child that
died is started again at the next call, logged.

Every question and batch has a deadline (embedframes.py: memoryd's ends are non-blocking): a child
that stops answering (frozen, stopped, stuck) is ended when it passes, and another is started at
the next call. A question gets QUERY_SECONDS, and the recall answers by its words without a second
try; a batch gets BATCH_SECONDS and TEXT_SECONDS a text, and the embedder thread tries it again
later (hybrid.py); loading the model gets START_SECONDS (embedprocess.py). end() ends the child at
once, whatever waits on it: memoryd's stop never waits for a child that does not answer.

Each text is cut to what the model reads before it is sent (embed.cut): a row can be up to
[index] max_record_bytes, and a batch of long ones was a frame the child refuses.

Progress: each batch is counted, and rate() is the records per second from the first batch of
the last RATE_WINDOW seconds up to now, which `bxctl memory stats` shows with the rows still
waiting (progress.py): a pass that stands still (a child stopped, starved, swapping) lowers it
at once rather than keeping the rate of its last batches. still() says how long no record has
been embedded once a batch has waited STILL_BATCHES batches' time (at least STILL_LEAST), which
stats then says instead of a time left. fault is why a question could not be embedded (the
model cannot load, the child failed or did not answer, the child started with memoryd did not
load its model, or a start has waited STILL_LEAST for it): recall then answers by words alone,
which stats says, until a question is embedded again (or, for a child that could not load its
model, a batch is).
"""

import subprocess
import threading
import time
from collections import deque

from memoryd.errors import StartFailed
from memoryd.modes import embedframes
from memoryd.modes.embed import cut
from memoryd.modes.embedprocess import Process, WorkerFailed, WorkerSilent, raw

RATE_WINDOW = 60.0
# A question takes 2 ms on an idle 2-core machine, tens of ms beside a batch; a recall that
# waits this long for one answers by its words.
QUERY_SECONDS = 3.0
# A batch of 32 texts of 128 tokens takes 0.3 s on an idle 2-core machine, about 2 s on a busy
# one: 42 s for 32 is twenty times that (a text is cut at 128 tokens: none takes much longer).
BATCH_SECONDS = 10.0
TEXT_SECONDS = 1.0
# After the child could not start (its model file damaged or missing), questions do not try to
# start it again for this long: each would pay a start (seconds) only to answer by words alone.
# The background embedding keeps its own, growing, pause.
QUESTION_RETRY_SECONDS = 60.0
# A batch in flight this many batches' time (and at least STILL_LEAST seconds) means the pass
# stands still. A batch's time varies by a factor of two or three with the machine's load, and a
# slow batch called standing still is no lie: the line then says only how long none was embedded.
STILL_BATCHES = 3
STILL_LEAST = 5.0


class Worker(Process):
    """memoryd's side: asks the child (embedprocess.Process: started, restarted when it dies)
    for the vectors of a batch or a question, each within its deadline."""

    def __init__(
        self,
        threads: int | None = None,
        tokens: int | None = None,
        as_shipped: bool = False,
        intra_op: bool = False,
    ):
        super().__init__(threads, tokens, as_shipped, intra_op)
        self._batch_lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._done: deque[tuple[float, int]] = deque()
        self.queries = _Queries(self)
        self._start_failed: tuple[float, StartFailed] | None = None
        self._asking: float | None = None  # when the batch in flight was handed over
        # Why the last question was not embedded (None: it was), and whether that was the
        # child failing to load its model, which a batch embedded disproves too.
        self._fault: str | None = None
        self._fault_at_start = False

    @property
    def fault(self) -> str | None:
        """Why recall answers by words alone now (None: it does not): a start that has waited
        STILL_LEAST for the model (questions give up on it after QUERY_SECONDS), else why the
        last question, or the first start, was not embedded."""
        loading = self.loading()
        if loading is not None and loading >= STILL_LEAST:
            return f"the embedding process has been loading its model for {loading:.0f} s"
        return self._fault

    @fault.setter
    def fault(self, why: str | None) -> None:
        self._fault = why

    def first_start(self) -> BaseException | None:
        """start() as memoryd's open makes it, on a thread of its own (builtin.py): a failure is
        returned, not raised, and kept as fault until a question or a batch is embedded; a
        child that refused (StartFailed: its model file changed since load checked it) is not
        started again by questions within QUESTION_RETRY_SECONDS, as after any start. None when
        the model loaded, or when the worker was stopped meanwhile (memoryd stopping: no
        failure)."""
        with self._lock:
            try:
                self._ensure()
            except (WorkerFailed, StartFailed) as error:
                if self._closed:
                    return None
                self._failed(error, at_start=isinstance(error, StartFailed))
                self._fault_at_start = True  # a batch embedded disproves it as a question does
                if isinstance(error, StartFailed):
                    self._start_failed = (time.monotonic(), error)
                return error
        return None

    def _ask(self, child: subprocess.Popen, write, read, payload: object, n: int, seconds: float):
        """payload's vectors (n of them) from child, written to write and read from read, within
        seconds; WorkerSilent (the child ended) when they do not come in time."""
        import numpy as np

        from memoryd.modes.embed import DIMENSIONS

        deadline = time.monotonic() + seconds
        try:
            embedframes.send(write, payload, deadline)
            answer = embedframes.receive(read, deadline)
        except embedframes.Late:
            self._end(child)
            raise WorkerSilent(
                f"the embedding process {child.pid} did not answer in {seconds:.0f} s;"
                " it was ended, and another is started at the next call"
            ) from None
        except (OSError, ValueError) as e:
            raise WorkerFailed(f"the embedding process failed: {e}") from None
        if not isinstance(answer, dict) or "vectors" not in answer:
            problem = answer.get("error") if isinstance(answer, dict) else "no answer"
            raise WorkerFailed(f"the embedding process failed: {problem}")
        vectors = np.frombuffer(answer["vectors"], dtype="<f4")
        if vectors.size != n * DIMENSIONS:
            raise WorkerFailed("the embedding process answered vectors of the wrong size")
        return vectors.reshape(n, DIMENSIONS)

    def embed(self, texts: list[str]):
        """An (n, 384) float32 array of unit vectors, one per text, computed in the child
        (the background batches); a child that died is started again once, one that did not
        answer in time (WorkerSilent) is not asked again here."""
        seconds = BATCH_SECONDS + TEXT_SECONDS * len(texts)
        texts = [cut(t, self.tokens) for t in texts]  # a frame far below what the child reads
        with self._batch_lock:
            self._asking = time.monotonic()
            try:
                found = self._embed(texts, seconds)
            except StartFailed as e:
                self._failed(e, at_start=True)  # questions cannot load the model either
                raise
            finally:
                self._asking = None
            if self._fault_at_start:
                self.fault, self._fault_at_start = None, False
            self._count(len(texts))
            return found

    def _embed(self, texts: list[str], seconds: float):
        """embed()'s asking, under the batch lock."""
        for attempt in (1, 2):  # a child found dead is replaced, and the batch sent again
            with self._lock:
                child = self._ensure()
            try:
                return self._ask(
                    child, raw(child.stdin), raw(child.stdout), texts, len(texts), seconds
                )
            except WorkerSilent:
                raise
            except WorkerFailed:
                self._kill(child)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # noqa: S101 (mypy: the loop returns or raises)

    def query(self, texts: list[str]):
        """As embed, on the child's other channel, which a batch in flight does not hold up;
        a child that died is started again once. No wait is longer than QUERY_SECONDS (a
        question behind another, or behind a child being started, gives up: WorkerSilent),
        except this call's own start of a child."""
        try:
            vectors = self._query([cut(t, self.tokens) for t in texts])
        except (WorkerFailed, StartFailed) as e:
            self._failed(e, at_start=isinstance(e, StartFailed))
            raise
        self.fault, self._fault_at_start = None, False
        return vectors

    def _failed(self, error: BaseException, at_start: bool) -> None:
        text = str(error).strip().splitlines()
        self.fault = text[0] if text else type(error).__name__
        if at_start:  # the extra or the model to put back, as a start refused for it says
            self.fault += " (runbook: memoryd-start-failed)"
        self._fault_at_start = at_start

    def _query(self, texts: list[str]):
        """query()'s asking, its texts cut."""
        for attempt in (1, 2):
            if not self._query_lock.acquire(timeout=QUERY_SECONDS):
                raise WorkerSilent("the embedding process is busy with other questions")
            try:
                if not self._lock.acquire(timeout=QUERY_SECONDS):
                    raise WorkerSilent("the embedding process is being started")
                try:
                    child = self._ensure_for_question()
                    channel = self._socket
                finally:
                    self._lock.release()
                if channel is None:
                    raise WorkerFailed("the embedding process has no query channel")
                try:
                    return self._ask(child, channel, channel, texts, len(texts), QUERY_SECONDS)
                except WorkerSilent:
                    raise
                except WorkerFailed:
                    self._kill(child)
                    if attempt == 2:
                        raise
            finally:
                self._query_lock.release()
        raise AssertionError("unreachable")  # noqa: S101 (mypy: the loop returns or raises)

    def _ensure_for_question(self) -> subprocess.Popen:
        """The child, started if need be, unless a start failed within QUESTION_RETRY_SECONDS:
        then that failure again at once (under self._lock)."""
        failed = self._start_failed
        running = self._child is not None and self._child.poll() is None  # started by a batch
        if not running and failed is not None:
            if time.monotonic() - failed[0] < QUESTION_RETRY_SECONDS:
                raise failed[1]
        try:
            child = self._ensure()
        except StartFailed as e:
            self._start_failed = (time.monotonic(), e)
            raise
        self._start_failed = None
        return child

    def _count(self, n: int) -> None:
        now = time.monotonic()
        self._done.append((now, n))
        while self._done and self._done[0][0] < now - RATE_WINDOW:
            self._done.popleft()

    def rate(self) -> float | None:
        """Records a second from the first batch of the last RATE_WINDOW seconds up to now (a
        pass that stands still lowers it at once); None without two batches in that time."""
        done = list(self._done)
        now = time.monotonic()
        if len(done) < 2 or done[-1][0] < now - RATE_WINDOW:
            return None
        return sum(n for _, n in done[1:]) / max(now - done[0][0], 1e-3)

    def still(self) -> float | None:
        """Seconds since a record was last embedded, when the batch in flight has waited
        STILL_BATCHES batches' time (at least STILL_LEAST seconds); None while the pass moves
        (or no batch is in flight: paused or idle, which the embedder thread says)."""
        asking, done = self._asking, list(self._done)
        if asking is None:
            return None
        now = time.monotonic()
        batch = (done[-1][0] - done[0][0]) / (len(done) - 1) if len(done) > 1 else 0.0
        if now - asking < max(STILL_LEAST, STILL_BATCHES * batch):
            return None
        return now - (done[-1][0] if done else asking)


class _Queries:
    """The recall side's embedder: embed() on the query channel (hybrid.Hybrid.embedder)."""

    def __init__(self, worker: Worker):
        self._worker = worker

    def embed(self, texts: list[str]):
        return self._worker.query(texts)
