"""memoryd's hold on its embedding child as a process (embedchild.py is the child, embedworker.py
asks it): start it with its two channels, wait for its model within START_SECONDS, start another
when it died, end it at once, reap it. Apart from the asking so that each stays small: the
locks and the child's state are here, the deadlines of the questions and batches there.

The child gets its batches on stdin/stdout and the recall's questions on a socket of its own;
memoryd's ends of both are made non-blocking (embedframes.py), so no read or write waits past its
deadline. A child that died is started again at the next call, logged; one ended for not
answering is logged by whoever ended it. end() ends the child at once, whatever waits on it:
memoryd's stop never waits for a child that does not answer.
"""

import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time

from memoryd.errors import MemorydError, StartFailed
from memoryd.modes import embedchild, embedframes

log = logging.getLogger(__name__)

# Loading the model takes about 2.5 s on the 2-core machine.
START_SECONDS = 120.0
# How long a child whose channels were closed is given to exit before it is killed.
EXIT_SECONDS = 1.0


class WorkerFailed(MemorydError, OSError):
    """The embedding process died or answered nonsense (the embedder pauses and starts another)."""


class WorkerSilent(WorkerFailed):
    """The embedding process did not answer in time: it was ended (not asked again at once)."""


class Process:
    """The child, its two channels, restarted when it dies (embedworker.Worker asks it)."""

    def __init__(
        self,
        threads: int | None = None,
        tokens: int | None = None,
        as_shipped: bool = False,
        intra_op: bool = False,
    ):
        self.threads = threads or embedchild.cores()
        # Benchmarks compare others (embed.Embedder): None is embed.MAX_TOKENS, and the
        # model's int8 graph, its groups run side by side on one thread each.
        self.tokens = tokens
        self.as_shipped = as_shipped
        self.intra_op = intra_op
        self._lock = threading.Lock()  # the child itself: start, restart, close
        self._child: subprocess.Popen | None = None
        self._socket: socket.socket | None = None  # the questions' channel, a question at a time
        self._ended: subprocess.Popen | None = None  # the last child ended for not answering
        self._closed = False
        self._loading: float | None = None  # since when a child's model is waited for

    def start(self) -> None:
        """Start the child and wait until its model is loaded; StartFailed with its reason
        (the extra missing, the model not the pinned one) when it cannot, WorkerFailed when it
        died or did not load in START_SECONDS (WorkerSilent). memoryd's open starts it on a
        thread of its own (builtin.py), and does not wait."""
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
        command = [sys.executable, "-m", embedchild.__name__, "--threads", str(self.threads)]
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
            self._loading = time.monotonic()
            hello = embedframes.receive(raw(child.stdout), self._loading + START_SECONDS)
        except embedframes.Late:
            self._kill(child)
            self._reap()
            raise WorkerSilent(
                f"the embedding process {child.pid} did not load its model in"
                f" {START_SECONDS:.0f} s; it was ended"
            ) from None
        except (OSError, ValueError):
            hello = None
        finally:
            self._loading = None
        if not isinstance(hello, dict) or not hello.get("ready"):
            problem = hello.get("error") if isinstance(hello, dict) else None
            self._reap()
            if problem:
                raise StartFailed(str(problem))
            raise WorkerFailed(
                f"the embedding process {child.pid} exited with {child.returncode} before its"
                " model was loaded"
            )
        log.info("embedding process %d started with %d threads", child.pid, self.threads)
        return child

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

    def loading(self) -> float | None:
        """Seconds a child's model has been waited for, None when no start is under way."""
        since = self._loading
        return None if since is None else time.monotonic() - since

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
        EXIT_SECONDS) and reap it. Called after the embedder thread has stopped. A start under
        way (the lock held while the model loads) is ended at once rather than waited for: a
        child that stalls while it loads must not hold memoryd's stop."""
        if not self._lock.acquire(blocking=False):
            self.end()
            self._lock.acquire()
        try:
            self._closed = True
            self._reap()
        finally:
            self._lock.release()


def raw(stream):
    """The unbuffered file under one of Popen's pipes (memoryd reads them within a deadline)."""
    return stream.raw
