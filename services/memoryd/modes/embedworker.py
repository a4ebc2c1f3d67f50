"""The hybrid mode's background embedding in a process of its own, on every core it may use.

The first embedding pass over a large history is pure computation. On one of memoryd's threads it
got one core (recall wants onnxruntime single-threaded beside the other calls), and the rest of
memoryd shared that interpreter with it; in a child, onnxruntime runs its intra-op threads on all
the cores the machine gives memoryd (one process, so the model's weights are held once: about
100 MB, which memoryd's 512 MiB container cannot afford twice). memoryd's embedder thread hands a
batch of texts to the child and waits on the pipe, holding neither the interpreter lock nor a
transaction; the event loop and the writer never wait on it. The question of a recall is still
embedded in memoryd itself, so a recall never queues behind a batch.

The child reads requests from its stdin and answers on its stdout: a 4-byte big-endian length,
then msgpack (a list of texts; the answer {"vectors": float32 bytes} or {"error": text}). It
exits at the end of its stdin, so it never outlives memoryd, even one killed with SIGKILL (as the
reindex's child, index/rebuild.py). A child that died is started again at the next batch, logged.

Progress: each batch is counted, and rate() is the records per second over the last RATE_WINDOW
seconds of batches, which `bxctl memory stats` shows with the rows still waiting (progress.py).
"""

import argparse
import logging
import os
import struct
import subprocess
import sys
import threading
import time
from collections import deque

import msgpack

from memoryd.errors import MemorydError

log = logging.getLogger(__name__)

RATE_WINDOW = 60.0
# A batch of 32 texts of 128 tokens takes about 2 s on a busy 2-core machine.
_FRAME = struct.Struct(">I")
_MAX_FRAME = 64 * 2**20


class WorkerFailed(MemorydError, OSError):
    """The embedding process died or answered nonsense (the embedder pauses and starts another)."""


def cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _write_frame(stream, payload: object) -> None:
    data = msgpack.packb(payload, use_bin_type=True)
    stream.write(_FRAME.pack(len(data)) + data)
    stream.flush()


def _read_frame(stream) -> object | None:
    """The next message, None at the end of the stream."""
    head = stream.read(_FRAME.size)
    if len(head) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(head)
    if size > _MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    data = stream.read(size)
    if len(data) < size:
        return None
    return msgpack.unpackb(data, raw=False)


class Worker:
    """memoryd's side: embed(texts) in the child, started on first use, one batch at a time."""

    def __init__(self, threads: int | None = None):
        self.threads = threads or cores()
        self._lock = threading.Lock()
        self._child: subprocess.Popen | None = None
        self._closed = False
        self._done: deque[tuple[float, int]] = deque()

    def _start(self) -> subprocess.Popen:
        command = [sys.executable, "-m", __name__, "--threads", str(self.threads)]
        # The child imports memoryd as this process does, wherever that came from.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            child = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
            )
        except OSError as e:
            raise WorkerFailed(f"the embedding process cannot start: {e.strerror}") from None
        log.info("embedding process %d started with %d threads", child.pid, self.threads)
        return child

    def embed(self, texts: list[str]):
        """An (n, 384) float32 array of unit vectors, one per text, computed in the child."""
        import numpy as np

        from memoryd.modes.embed import DIMENSIONS

        with self._lock:
            if self._closed:
                raise WorkerFailed("the embedding process is stopped")
            if self._child is None or self._child.poll() is not None:
                if self._child is not None:
                    log.warning(
                        "embedding process %d exited with %s; starting another",
                        self._child.pid,
                        self._child.returncode,
                    )
                    self._reap()
                self._child = self._start()
            child = self._child
            try:
                _write_frame(child.stdin, list(texts))
                answer = _read_frame(child.stdout)
            except (OSError, ValueError) as e:
                self._reap()
                raise WorkerFailed(f"the embedding process failed: {e}") from None
            if not isinstance(answer, dict) or "vectors" not in answer:
                problem = answer.get("error") if isinstance(answer, dict) else "no answer"
                self._reap()
                raise WorkerFailed(f"the embedding process failed: {problem}")
            vectors = np.frombuffer(answer["vectors"], dtype="<f4")
            if vectors.size != len(texts) * DIMENSIONS:
                self._reap()
                raise WorkerFailed("the embedding process answered vectors of the wrong size")
            self._count(len(texts))
            return vectors.reshape(len(texts), DIMENSIONS)

    def _count(self, n: int) -> None:
        now = time.monotonic()
        self._done.append((now, n))
        while self._done and self._done[0][0] < now - RATE_WINDOW:
            self._done.popleft()

    def rate(self) -> float | None:
        """Records a second over the batches of the last RATE_WINDOW seconds; None without any."""
        done = list(self._done)
        if len(done) < 2:
            return None
        span = max(time.monotonic() - done[0][0], 1e-3)
        return sum(n for _, n in done[1:]) / span

    @property
    def pid(self) -> int | None:
        child = self._child
        return None if child is None or child.poll() is not None else child.pid

    def _reap(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def close(self) -> None:
        """End the child (the end of its stdin) and wait for it. A batch in flight finishes
        first: close() is called after the embedder thread has stopped."""
        with self._lock:
            self._closed = True
            self._reap()


def serve(threads: int) -> int:
    """The child's loop: a batch in, its vectors out, until stdin ends."""
    from memoryd.modes.embed import Embedder

    embedder = Embedder(threads=threads)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            texts = _read_frame(stdin)
        except ValueError as e:
            log.error("embedding process: a request it cannot read: %s", e)
            return 1
        if texts is None:
            return 0  # memoryd closed the pipe or is gone
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            _write_frame(stdout, {"error": "a request that is not a list of texts"})
            continue
        vectors = embedder.embed(texts)
        _write_frame(stdout, {"vectors": vectors.astype("<f4").tobytes()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memoryd.modes.embedworker", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--threads", type=int, default=cores())
    args = parser.parse_args(argv)
    from proto.logline import configure_role

    configure_role()
    try:
        return serve(max(1, args.threads))
    except BrokenPipeError:
        return 0  # memoryd went away while an answer was on its way
    except MemorydError as e:
        log.error("embedding process: cannot start: %s", e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
