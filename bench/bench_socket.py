"""Benchmark: recall over memoryd's brokerd socket against recall in-process on the same index.

It generates a home (bench_index's generator), starts memoryd as a subprocess on it (which
indexes everything at start), then runs the same queries both ways, interleaved, and prints the
p50 and p99 latency of each and their ratio, measured in the same run. The socket path costs a
connection, a frame each way, validation and a thread hop per request.

    .venv/bin/python bench/bench_socket.py [--records 100000] [--queries 500]
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.recalling

import memoryd_proc
from bench_index import Generator, percentile

from memoryd.index.index import Index
from proto.client import request
from proto.messages import MemoryCall, ToolRequest
from tests.recalling import recall_on


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args(argv)
    print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-socket-") as tmp:
        generator = Generator()
        home = generator.home(Path(tmp) / "home", args.records)
        started = time.perf_counter()
        proc = memoryd_proc.start(Path(tmp), home)
        try:
            sock = memoryd_proc.sockets(home)["broker"]
            print(
                f"records {args.records}: memoryd indexed and listening in "
                f"{time.perf_counter() - started:.1f} s"
            )
            index = Index(home)
            index.open()
            queries = [generator.query() for _ in range(args.queries)]

            def over_socket(text: str) -> None:
                req = ToolRequest(
                    session="bench",
                    call_id="c",
                    tool="recall",
                    arguments=json.dumps({"query": text, "k": 5}),
                )
                reply = request(sock, MemoryCall(request=req, taint="private", untrusted=False))
                if not reply.ok:
                    raise SystemExit(f"recall failed: {reply.output}")

            def in_process(text: str) -> None:
                recall_on(index, text, 5, session="bench")

            for text in queries[:20]:
                over_socket(text)
                in_process(text)
            times: dict[str, list[float]] = {"socket": [], "in-process": []}
            for n, text in enumerate(queries):
                order = (("socket", over_socket), ("in-process", in_process))
                for name, fn in order if n % 2 else order[::-1]:
                    t0 = time.perf_counter()
                    fn(text)
                    times[name].append(time.perf_counter() - t0)
            index.close()
            for p in (50, 99):
                s, i = percentile(times["socket"], p), percentile(times["in-process"], p)
                print(
                    f"records {args.records}: recall p{p} over the socket {s * 1e3:.3f} ms, "
                    f"in-process {i * 1e3:.3f} ms, ratio {s / i:.2f}"
                )
        finally:
            memoryd_proc.stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
