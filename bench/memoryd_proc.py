"""memoryd as a process on a benchmark's home: the one way the benchmarks that go over its sockets
start it (bench_socket, bench_recall, bench_mcp, bench_load, bench_flood).

start() writes a soul and a memoryd.toml beside the home, spawns `python -m memoryd serve` (this
interpreter, so the code on PYTHONPATH is the code measured), and waits until the sockets asked
for exist; stop() ends it.
"""

import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from memoryd.home import Home
from proto.paths import BROKER_MEMORY_SOCKET, LOOP_MEMORY_SOCKET, under

START_SECONDS = 600


def sockets(home: Home) -> dict[str, Path]:
    return {
        "loop": under(home.root, LOOP_MEMORY_SOCKET),
        "broker": under(home.root, BROKER_MEMORY_SOCKET),
    }


def start(
    root: Path,
    home: Home,
    *,
    log: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
    wait: Iterable[str] = ("broker",),
) -> subprocess.Popen:
    """memoryd serving home, its config and soul in root; waits for the sockets named in wait
    ("loop", "broker"). Its stderr goes to log, or nowhere."""
    (root / "soul.md").write_text("A bench soul.\n")
    config = root / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{home.root}"\n')
    paths = [sockets(home)[name] for name in wait]
    for path in paths:  # left by a run on a kept home: wait for this memoryd's own
        path.unlink(missing_ok=True)
    stderr = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(config)],
        stderr=stderr,
        preexec_fn=preexec_fn,
    )
    if log is not None:
        stderr.close()  # the child has its own descriptor
    deadline = time.monotonic() + START_SECONDS
    while not all(path.exists() for path in paths):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            told = f": {log.read_text()[-3000:]}" if log is not None else ""
            raise SystemExit(f"memoryd did not start{told}")
        time.sleep(0.05)
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
    proc.wait(30)
