"""Benchmark: recall over memoryd's brokerd socket while a peer floods the loopd socket.

It generates a home (bench_index's generator), starts memoryd as a subprocess with the descriptor
limit of the containers (`ulimit -n 1024`), and measures recall over the brokerd socket twice in
the same run: quiet, then while a flooder process holds --flood idle connections on the loopd
socket and opens a new one for each the server closes (it raises its own descriptor limit to do
so). It prints the p50 and p99 latency of each phase, the failures, and what the flood held.

    .venv/bin/python bench/bench_flood.py [--records 20000] [--queries 400] [--flood 1100]
                                          [--seconds 15]

The flood phase lasts at least --seconds, longer than memoryd's request deadline (5 s), so the
flooder's connections are cut and reopened during it.

A third phase sends, one after another, 700 KB bodies of 90,000 unknown keys to the owner socket
while the recalls go on, and prints the size of the replies and how long each took. A fourth
holds every connection the sockets allow, each sending a 1 MiB request slowly, and prints
memoryd's resident memory before, at most during, and after (its container limit is 512 MiB).

Target: recall p99 under 100 ms with 1,100 idle connections held on the loopd socket.
"""

import argparse
import contextlib
import itertools
import json
import os
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import memoryd_proc
import msgpack
from bench_index import Generator, percentile

from proto.client import request
from proto.messages import MemoryCall, ToolRequest
from proto.paths import OWNER_ADMIN_SOCKET, under

NOFILE = 1024


def flood(path: str, count: int, seconds: float) -> None:
    """Hold count connections to path for seconds, reopening each one the server closes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 256), hard))
    selector = selectors.DefaultSelector()
    opened = failed = 0

    def open_one() -> bool:
        nonlocal opened, failed
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except OSError:
            s.close()
            failed += 1
            return False
        selector.register(s, selectors.EVENT_READ)
        opened += 1
        return True

    end = time.monotonic() + seconds
    try:
        _hold(selector, count, end, open_one)
    except KeyboardInterrupt:
        pass
    held = len(selector.get_map())
    print(json.dumps({"held": held, "opened": opened, "closed": _closed[0], "refused": failed}))


_closed = [0]


def _hold(selector, count: int, end: float, open_one) -> None:
    while time.monotonic() < end:
        full = False
        while not full and len(selector.get_map()) < count and time.monotonic() < end:
            full = not open_one()  # the listen queue is full: read, then try again
        for key, _ in selector.select(timeout=0.001 if full else 0.05):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:
                selector.unregister(key.fileobj)
                key.fileobj.close()
                _closed[0] += 1


class BadBodies(threading.Thread):
    """Send, one after the other, a 700 KB memory_admin body of 90,000 unknown keys."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path = path
        body = {"command": "log", "arg": "1", **{f"k{n:06d}": 1 for n in range(90_000)}}
        payload = msgpack.packb({"kind": "memory_admin", "body": body}, use_bin_type=True)
        self.frame = struct.pack(">I", len(payload)) + payload
        self.sent = self.answered = self.largest = 0
        self.spent = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            t0 = time.perf_counter()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            try:
                s.connect(str(self.path))
                s.sendall(self.frame)
                reply = b""
                while chunk := s.recv(65536):
                    reply += chunk
            except OSError:
                reply = b""
            finally:
                s.close()
            self.sent += 1
            self.spent += time.perf_counter() - t0
            if reply:
                self.answered += 1
                self.largest = max(self.largest, len(reply))

    def mean(self) -> float:
        return self.spent / max(self.sent, 1)

    def stop(self) -> None:
        self._done.set()
        self.join(30)


class SlowFrames(threading.Thread):
    """Hold every connection the sockets allow (less room for the recalls on the brokerd one),
    each announcing a 1 MiB request and sending it slowly, cut and opened again before memoryd's
    request deadline; sample memoryd's resident memory meanwhile."""

    ANNOUNCED = 1_048_576
    CHUNK = b"\x00" * 65_536
    ROUND = 3.5  # seconds, under request_seconds (10): memoryd would cut them

    def __init__(self, sockets: list[tuple[Path, int]], pid: int):
        super().__init__(daemon=True)
        self.sockets, self.pid = sockets, pid
        self.base = self.peak = _rss(pid)
        self.held = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            conns = []
            for path, count in self.sockets:
                for _ in range(count):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        s.connect(str(path))
                        s.setblocking(False)
                        s.send(struct.pack(">I", self.ANNOUNCED))
                    except OSError:
                        s.close()
                        continue
                    conns.append([s, 0])
            self.held = max(self.held, len(conns))
            end = time.monotonic() + self.ROUND
            while time.monotonic() < end and not self._done.is_set():
                for conn in conns:
                    if conn[1] < self.ANNOUNCED - 2 * len(self.CHUNK):
                        with contextlib.suppress(OSError):
                            conn[1] += conn[0].send(self.CHUNK)
                self.peak = max(self.peak, _rss(self.pid))
                time.sleep(0.05)
            for conn in conns:
                conn[0].close()

    def stop(self) -> None:
        self._done.set()
        self.join(30)


def _rss(pid: int) -> int:
    """memoryd's resident memory in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--flood", type=int, default=1100)
    parser.add_argument(
        "--seconds", type=float, default=15.0, help="least time recalled under the flood"
    )
    parser.add_argument("--flooder", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.flooder:
        flood(args.flooder[0], int(args.flooder[1]), float(args.flooder[2]))
        return 0
    print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}, memoryd nofile {NOFILE}")
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as tmp:
        generator = Generator()
        home = generator.home(Path(tmp) / "home", args.records)
        proc = memoryd_proc.start(
            Path(tmp),
            home,
            log=Path(tmp) / "memoryd.log",
            preexec_fn=limit_descriptors,
            wait=("loop", "broker"),
        )
        try:
            broker = memoryd_proc.sockets(home)["broker"]
            loop_socket = memoryd_proc.sockets(home)["loop"]
            queries = [generator.query() for _ in range(args.queries)]

            def phase(seconds: float = 0.0) -> tuple[list[float], int]:
                """Recall each query once, and go on until seconds have passed."""
                times, failures = [], 0
                end = time.monotonic() + seconds
                for n in itertools.count():
                    if n >= len(queries) and time.monotonic() >= end:
                        break
                    text = queries[n % len(queries)]
                    req = ToolRequest(
                        session="bench",
                        call_id="c",
                        tool="recall",
                        arguments=json.dumps({"query": text, "k": 5}),
                    )
                    t0 = time.perf_counter()
                    try:
                        reply = request(
                            broker, MemoryCall(request=req, taint="private", untrusted=False), 5.0
                        )
                        ok = reply.ok
                    except Exception:
                        ok = False
                    times.append(time.perf_counter() - t0)
                    failures += not ok
                return times, failures

            phase()  # warm up
            quiet, quiet_failed = phase()
            flooder = subprocess.Popen(
                [sys.executable, __file__, "--flooder", str(loop_socket), str(args.flood), "600"],
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(3.0)  # let the flood fill the cap and the listen queue
            fds = len(os.listdir(f"/proc/{proc.pid}/fd"))
            flooded, flooded_failed = phase(args.seconds)
            flooder.send_signal(signal.SIGINT)
            out, _ = flooder.communicate(60)
            bad = BadBodies(under(home.root, OWNER_ADMIN_SOCKET))
            bad.start()
            amplified, amplified_failed = phase(args.seconds)
            bad.stop()
            slow = SlowFrames(
                [(loop_socket, 256), (under(home.root, OWNER_ADMIN_SOCKET), 64), (broker, 248)],
                proc.pid,
            )
            slow.start()
            time.sleep(1.0)
            slowed, slowed_failed = phase(args.seconds)
            slow.stop()
            for name, times, failed in (
                ("quiet", quiet, quiet_failed),
                (f"{args.flood} held on loopd", flooded, flooded_failed),
                ("90,000-key bodies sent to the owner socket", amplified, amplified_failed),
                (f"{slow.held} slow 1 MiB requests", slowed, slowed_failed),
            ):
                print(
                    f"recall over the brokerd socket, {name}: p50 "
                    f"{percentile(times, 50) * 1e3:.2f} ms, p99 {percentile(times, 99) * 1e3:.2f} "
                    f"ms, max {max(times) * 1e3:.2f} ms, failed {failed} of {len(times)}"
                )
            ratio = percentile(flooded, 99) / percentile(quiet, 99)
            print(f"p99 flooded / quiet: {ratio:.2f}; memoryd descriptors in use: {fds}")
            print(
                f"bad bodies: {bad.sent} sent, frame {len(bad.frame)} bytes, "
                f"{bad.answered} answered, largest reply {bad.largest} bytes, "
                f"mean time to the reply {bad.mean() * 1e3:.0f} ms"
            )
            print(
                f"slow 1 MiB requests: {slow.held} held at once; memoryd RSS {slow.base} MiB"
                f" before, at most {slow.peak} MiB while they were sent, {_rss(proc.pid)} MiB after"
            )
            if out.strip():
                print(f"flooder: {out.strip().splitlines()[-1]}")
            else:
                print("flooder: (stopped before reporting)")
        finally:
            memoryd_proc.stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
