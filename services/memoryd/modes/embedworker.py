"""The hybrid mode's model in a process of its own: the background embedding on every core, and
the questions of recall on a channel of their own.

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
later (hybrid.py); loading the model gets START_SECONDS. end() ends the child at once, whatever
waits on it: memoryd's stop never waits for a child that does not answer.

Progress: each batch is counted, and rate() is the records per second over the last RATE_WINDOW
seconds of batches, which `bxctl memory stats` shows with the rows still waiting (progress.py).
"""

import argparse
import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque

from memoryd.errors import MemorydError, StartFailed
from memoryd.modes import embedframes

log = logging.getLogger(__name__)

RATE_WINDOW = 60.0
# A question takes 2 ms on an idle 2-core machine, tens of ms beside a batch; a recall that
# waits this long for one answers by its words.
QUERY_SECONDS = 3.0
# A batch of 32 texts of 128 tokens takes 0.3 s on an idle 2-core machine, about 2 s on a busy
# one: 42 s for 32 is twenty times that (a text is cut at 128 tokens: none takes much longer).
BATCH_SECONDS = 10.0
TEXT_SECONDS = 1.0
# Loading the model takes about 2.5 s on the 2-core machine.
START_SECONDS = 120.0
# How long a child whose channels were closed is given to exit before it is killed.
EXIT_SECONDS = 1.0


class WorkerFailed(MemorydError, OSError):
    """The embedding process died or answered nonsense (the embedder pauses and starts another)."""


class WorkerSilent(WorkerFailed):
    """The embedding process did not answer in time: it was ended (not asked again at once)."""


def cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Worker:
    """memoryd's side: the child, its two channels, restarted when it dies."""

    def __init__(
        self,
        threads: int | None = None,
        tokens: int | None = None,
        as_shipped: bool = False,
        intra_op: bool = False,
    ):
        self.threads = threads or cores()
        # Benchmarks compare others (embed.Embedder): None is embed.MAX_TOKENS, and the
        # model's int8 graph, its groups run side by side on one thread each.
        self.tokens = tokens
        self.as_shipped = as_shipped
        self.intra_op = intra_op
        self._lock = threading.Lock()  # the child itself: start, restart, close
        self._batch_lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._child: subprocess.Popen | None = None
        self._socket: socket.socket | None = None  # the questions' channel, a question at a time
        self._ended: subprocess.Popen | None = None  # the last child ended for not answering
        self._closed = False
        self._done: deque[tuple[float, int]] = deque()
        self.queries = _Queries(self)

    def start(self) -> None:
        """Start the child and wait until its model is loaded; StartFailed with its reason
        (the extra missing, the model not the pinned one) when it cannot."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> subprocess.Popen:
        if self._closed:
            raise WorkerFailed("the embedding process is stopped")
        if self._child is not None and self._child.poll() is None:
            return self._child
        if self._child is not None:
            if self._child is not self._ended:  # an ended one was logged by its caller
                log.warning(
                    "embedding process %d exited with %s; starting another",
                    self._child.pid,
                    self._child.returncode,
                )
            self._reap()
        ours, theirs = socket.socketpair()
        command = [sys.executable, "-m", __name__, "--threads", str(self.threads)]
        command += ["--queries", str(theirs.fileno())]
        if self.tokens:
            command += ["--tokens", str(self.tokens)]
        command += ["--as-shipped"] if self.as_shipped else []
        command += ["--intra-op"] if self.intra_op else []
        # The child imports memoryd as this process does, wherever that came from.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            child = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as e:
            ours.close()
            raise WorkerFailed(f"the embedding process cannot start: {e.strerror}") from None
        finally:
            theirs.close()
        self._child, self._socket = child, ours
        if self._closed:  # end() came before this child was known to it
            self._kill(child)
            self._reap()
            raise WorkerFailed("the embedding process is stopped")
        try:
            os.set_blocking(child.stdin.fileno(), False)  # type: ignore[union-attr]
            os.set_blocking(child.stdout.fileno(), False)  # type: ignore[union-attr]
            ours.setblocking(False)
            hello = embedframes.receive(_raw(child.stdout), time.monotonic() + START_SECONDS)
        except embedframes.Late:
            self._kill(child)
            self._reap()
            raise WorkerSilent(
                f"the embedding process did not load its model in {START_SECONDS:.0f} s"
            ) from None
        except (OSError, ValueError):
            hello = None
        if not isinstance(hello, dict) or not hello.get("ready"):
            problem = hello.get("error") if isinstance(hello, dict) else None
            self._reap()
            if problem:
                raise StartFailed(str(problem))
            raise WorkerFailed("the embedding process exited before its model was loaded")
        log.info("embedding process %d started with %d threads", child.pid, self.threads)
        return child

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
        with self._batch_lock:
            for attempt in (1, 2):  # a child found dead is replaced, and the batch sent again
                with self._lock:
                    child = self._ensure()
                try:
                    found = self._ask(
                        child,
                        _raw(child.stdin),
                        _raw(child.stdout),
                        list(texts),
                        len(texts),
                        seconds,
                    )
                    break
                except WorkerSilent:
                    raise
                except WorkerFailed:
                    self._kill(child)
                    if attempt == 2:
                        raise
            self._count(len(texts))
            return found

    def query(self, texts: list[str]):
        """As embed, on the child's other channel, which a batch in flight does not hold up;
        a child that died is started again once. No wait is longer than QUERY_SECONDS (a
        question behind another, or behind a child being started, gives up: WorkerSilent),
        except this call's own start of a child."""
        for attempt in (1, 2):
            if not self._query_lock.acquire(timeout=QUERY_SECONDS):
                raise WorkerSilent("the embedding process is busy with other questions")
            try:
                if not self._lock.acquire(timeout=QUERY_SECONDS):
                    raise WorkerSilent("the embedding process is being started")
                try:
                    child = self._ensure()
                    channel = self._socket
                finally:
                    self._lock.release()
                if channel is None:
                    raise WorkerFailed("the embedding process has no query channel")
                try:
                    return self._ask(
                        child, channel, channel, list(texts), len(texts), QUERY_SECONDS
                    )
                except WorkerSilent:
                    raise
                except WorkerFailed:
                    self._kill(child)
                    if attempt == 2:
                        raise
            finally:
                self._query_lock.release()
        raise AssertionError("unreachable")  # noqa: S101 (mypy: the loop returns or raises)

    def _kill(self, child: subprocess.Popen) -> None:
        """A channel failed: end that child (the next call starts another)."""
        if child.poll() is None:
            child.kill()
        child.wait()

    def _end(self, child: subprocess.Popen) -> None:
        """child did not answer in time: kill it (SIGKILL ends a stopped process too); the
        next call starts another, without logging the exit its caller reports."""
        self._ended = child
        self._kill(child)

    def end(self) -> None:
        """Stop for good, at once: kill the child, so that whatever waits on it (a batch, a
        question, its start) fails now; close() then reaps it. Takes no lock: a thread that
        starts the child holds one while the model loads."""
        self._closed = True
        child = self._child
        if child is not None:
            self._ended = child
            with contextlib.suppress(OSError):
                child.kill()

    def _count(self, n: int) -> None:
        now = time.monotonic()
        self._done.append((now, n))
        while self._done and self._done[0][0] < now - RATE_WINDOW:
            self._done.popleft()

    def rate(self) -> float | None:
        """Records a second over the batches of the last RATE_WINDOW seconds; None without any."""
        done = list(self._done)
        if len(done) < 2 or done[-1][0] < time.monotonic() - RATE_WINDOW:
            return None
        span = max(done[-1][0] - done[0][0], 1e-3)
        return sum(n for _, n in done[1:]) / span

    @property
    def pid(self) -> int | None:
        child = self._child
        return None if child is None or child.poll() is not None else child.pid

    def _reap(self) -> None:
        child, self._child = self._child, None
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
        self._socket = None
        if child is None:
            return
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        try:
            child.wait(timeout=EXIT_SECONDS)  # it exits at the end of its channels
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def close(self) -> None:
        """End the child (the end of its channels; killed when it has not exited within
        EXIT_SECONDS) and reap it. Called after the embedder thread has stopped."""
        with self._lock:
            self._closed = True
            self._reap()


def _raw(stream):
    """The unbuffered file under one of Popen's pipes (memoryd reads them within a deadline)."""
    return stream.raw


class _Queries:
    """The recall side's embedder: embed() on the query channel (hybrid.Hybrid.embedder)."""

    def __init__(self, worker: Worker):
        self._worker = worker

    def embed(self, texts: list[str]):
        return self._worker.query(texts)


def _serve_channel(embedder, read, write) -> None:
    """Answer one channel until it ends; then the whole child ends (memoryd is gone, or let
    this child go)."""
    try:
        while (texts := embedframes.read(read)) is not None:
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                embedframes.write(write, {"error": "a request that is not a list of texts"})
                continue
            vectors = embedder.embed(texts)
            embedframes.write(write, {"vectors": vectors.astype("<f4").tobytes()})
    except ValueError as e:
        log.error("embedding process: a request it cannot read: %s", e)
        os._exit(1)
    except OSError:
        pass  # memoryd went away while an answer was on its way
    os._exit(0)


def serve(
    threads: int,
    queries: int | None = None,
    tokens: int | None = None,
    as_shipped: bool = False,
    intra_op: bool = False,
) -> int:
    """The child: load the model, say so, then answer batches on stdin/stdout and questions on
    the queries socket, each on its own thread, until either ends."""
    from memoryd.modes.embed import Embedder

    stdout = sys.stdout.buffer
    try:
        embedder = Embedder(threads, tokens, as_shipped, intra_op)
    except MemorydError as e:
        embedframes.write(stdout, {"error": str(e)})
        return 2
    embedframes.write(stdout, {"ready": True})
    if queries is not None:
        channel = socket.socket(fileno=queries)
        stream = channel.makefile("rwb")
        threading.Thread(
            target=_serve_channel, args=(embedder, stream, stream), name="queries", daemon=True
        ).start()
    _serve_channel(embedder, sys.stdin.buffer, stdout)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memoryd.modes.embedworker", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--threads", type=int, default=cores())
    parser.add_argument("--tokens", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--as-shipped", action="store_true")
    parser.add_argument("--intra-op", action="store_true")
    args = parser.parse_args(argv)
    from proto.logline import configure_role

    configure_role()
    return serve(max(1, args.threads), args.queries, args.tokens, args.as_shipped, args.intra_op)


if __name__ == "__main__":
    sys.exit(main())
