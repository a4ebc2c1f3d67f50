"""The hybrid mode's model in a process of its own: the embedding child, which memoryd starts as
`python -m memoryd.modes.embedchild` (embedprocess.py) and asks (embedworker.py). It is apart from
memoryd so that the model's computation has all the cores and an interpreter of its own, and
memoryd never loads the model.

It loads the model (embed.Embedder), says so in its first frame on stdout ({"ready": true}, or
{"error": ...} when the extra or the pinned model is missing), then answers batches of texts on
stdin/stdout and the recall's questions on the socket memoryd passed it, each on a thread of its
own (onnxruntime's run is thread-safe and releases the interpreter lock). It reads and writes its
frames blocking (embedframes.py), and exits at the end of either channel, so it never outlives
memoryd, even one killed with SIGKILL.
"""

import argparse
import logging
import os
import socket
import sys
import threading

from memoryd.errors import MemorydError
from memoryd.modes import embedframes

log = logging.getLogger(__name__)


def cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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
        prog="memoryd.modes.embedchild", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--threads", type=int, default=cores())
    parser.add_argument("--tokens", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--as-shipped", action="store_true")
    parser.add_argument("--intra-op", action="store_true")
    args = parser.parse_args(argv)
    from proto.logline import configure_role

    configure_role()
    try:
        return serve(
            max(1, args.threads), args.queries, args.tokens, args.as_shipped, args.intra_op
        )
    except BrokenPipeError:
        # memoryd, the one reader of stdout, is gone (killed while the model loaded): there is
        # no one to answer, and a traceback in its log would say a fault where there is none.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
