"""Benchmark of memoryd's start and of a reindex under load.

For a home of N records (bench_index's generator: one long session, sessions of 1,000 records, a
notes.md) and no index, as after `rm -r index/` or a first start on old sessions, it starts
`memoryd serve` as a process and prints:

- cold start: time from the spawn to the first memory_block answered, to the first recall
  answered (and whether it said the index was catching up), and to the log line that the
  catch-up is done, with the catch-up's records per second;
- then, on the caught-up home: a reindex over the owner's socket while one client asks for the
  memory block in a loop and another writes notes in a loop: the reindex's records per second,
  the block's p50/p99 and the notes' p50/p99 and maximum during the reindex;
- then a warm start (stop, start again on the whole index): time to the first memory_block.

With --python-path DIR (a checkout's libs:services), the same runs against another memoryd, to
print today's figures beside these.

    .venv/bin/python bench/bench_startup.py [--records 1000000] [--python-path OLD] [--reuse DIR]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from proto.client import request
from proto.messages import MemoryBlock, MemoryCall, Reindex, ToolRequest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_index import Generator, percentile  # noqa: E402


class Memoryd:
    def __init__(self, root: Path, python_path: str | None):
        self.root = root
        self.home = root / "home"
        self.config = root / "memoryd.toml"
        (root / "soul.md").write_text("You are a careful personal agent.\n")
        self.config.write_text(f'[paths]\nhome = "{self.home}"\n')
        self.log = root / "memoryd.log"
        self.env = dict(os.environ)
        if python_path:
            self.env["PYTHONPATH"] = python_path
        self.loop = self.home / "run/loop-memory/memory.sock"
        self.broker = self.home / "run/broker-memory/memory.sock"
        self.admin = self.home / "run/owner-memory/admin.sock"
        self.proc: subprocess.Popen | None = None

    def spawn(self) -> float:
        self.logged_before = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as log:
            started = time.perf_counter()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memoryd", "serve", "--config", str(self.config)],
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=self.env,
            )
        return started

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(120)

    def logged(self, text: bytes) -> bool:
        """Whether this run of memoryd (since the last spawn) logged text."""
        with open(self.log, "rb") as f:
            f.seek(self.logged_before)
            return text in f.read()


def _until(ask, deadline: float = 600.0):
    """Call ask until it answers (sockets not yet there raise); return the answer."""
    give_up = time.monotonic() + deadline
    while True:
        try:
            return ask()
        except Exception:  # noqa: BLE001 - not listening yet
            if time.monotonic() > give_up:
                raise
            time.sleep(0.005)


def _recall(path: Path, query: str):
    req = ToolRequest(
        session="bench", call_id="c1", tool="recall", arguments=json.dumps({"query": query})
    )
    return request(path, MemoryCall(request=req, taint="private", untrusted=False), timeout=60)


def _note(path: Path, n: int):
    args = json.dumps({"action": "note", "text": f"bench note {n} about the reindex"})
    req = ToolRequest(session="bench", call_id=f"n{n}", tool="memory", arguments=args)
    return request(path, MemoryCall(request=req, taint="private", untrusted=False), timeout=60)


def empty_start(root: Path, python_path: str | None) -> None:
    """The same start on an empty home: what starting the interpreter and memoryd costs alone."""
    root.mkdir()
    memoryd = Memoryd(root, python_path)
    started = memoryd.spawn()
    try:
        _until(lambda: request(memoryd.loop, MemoryBlock(), timeout=60))
        block = time.perf_counter() - started
    finally:
        memoryd.stop()
    print(f"cold start, empty home: first memory_block {block:.2f} s after the spawn")


def cold_start(memoryd: Memoryd, records: int) -> None:
    started = memoryd.spawn()
    _until(lambda: request(memoryd.loop, MemoryBlock(), timeout=60))
    block = time.perf_counter() - started
    answer = _until(lambda: _recall(memoryd.broker, "the"))
    recall = time.perf_counter() - started
    partial = answer.output.splitlines()[-1] if "catching up" in answer.output else "complete"
    while not memoryd.logged(b": caught up, "):
        if memoryd.proc.poll() is not None:
            raise RuntimeError(memoryd.log.read_text())
        time.sleep(0.05)
    caught = time.perf_counter() - started
    print(f"cold start, {records} records: first memory_block {block:.2f} s after the spawn")
    print(f"cold start, {records} records: first recall {recall:.2f} s ({partial})")
    print(
        f"cold start, {records} records: caught up {caught:.2f} s after the spawn:"
        f" {records / caught:,.0f} records/s"
    )


def warm_start(memoryd: Memoryd, records: int) -> None:
    started = memoryd.spawn()
    _until(lambda: request(memoryd.loop, MemoryBlock(), timeout=60))
    block = time.perf_counter() - started
    print(f"warm start, {records} records: first memory_block {block:.2f} s after the spawn")


def reindex_under_load(memoryd: Memoryd, records: int) -> None:
    done = threading.Event()
    blocks: list[float] = []
    notes: list[float] = []

    def ask_blocks() -> None:
        while not done.is_set():
            t = time.perf_counter()
            request(memoryd.loop, MemoryBlock(), timeout=60)
            blocks.append(time.perf_counter() - t)
            time.sleep(0.002)

    def write_notes() -> None:
        n = 0
        while not done.is_set():
            t = time.perf_counter()
            answer = _note(memoryd.broker, n)
            if not answer.ok:
                raise RuntimeError(answer.output)
            notes.append(time.perf_counter() - t)
            n += 1
            time.sleep(0.02)

    threads = [threading.Thread(target=ask_blocks), threading.Thread(target=write_notes)]
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    reply = request(memoryd.admin, Reindex(), timeout=600)
    elapsed = time.perf_counter() - started
    done.set()
    for thread in threads:
        thread.join()
    print(
        f"reindex, {records} records: {elapsed:.2f} s, {records / elapsed:,.0f} records/s"
        f" ({reply.logs} logs, {reply.records} rows, {reply.notes} notes)"
    )
    print(
        f"reindex, {records} records: memory_block during it p50 {percentile(blocks, 50) * 1e3:.2f}"
        f" ms, p99 {percentile(blocks, 99) * 1e3:.2f} ms ({len(blocks)} requests)"
    )
    if notes:
        print(
            f"reindex, {records} records: note during it p50 {percentile(notes, 50) * 1e3:.2f} ms,"
            f" p99 {percentile(notes, 99) * 1e3:.2f} ms, max {max(notes) * 1e3:.2f} ms"
            f" ({len(notes)} notes)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--python-path", default=None, help="run another memoryd (libs:services)")
    parser.add_argument(
        "--reuse", type=Path, default=None, help="a folder holding home/ from an earlier run"
    )
    args = parser.parse_args(argv)
    print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        root = args.reuse or Path(tmp)
        if args.reuse is None:
            started = time.perf_counter()
            Generator().home(root / "home", args.records)
            print(f"generated {args.records} records in {time.perf_counter() - started:.1f} s")
        else:  # a cold start again: no index, no sockets
            shutil.rmtree(root / "home/index", ignore_errors=True)
            shutil.rmtree(root / "home/run", ignore_errors=True)
        empty_start(Path(tmp) / "empty", args.python_path)
        memoryd = Memoryd(root, args.python_path)
        try:
            cold_start(memoryd, args.records)
            reindex_under_load(memoryd, args.records)
            memoryd.stop()
            warm_start(memoryd, args.records)
        finally:
            memoryd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
