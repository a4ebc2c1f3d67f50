"""Benchmark of memoryd's memory with one huge record.

A home of N ordinary records (bench_index's generator) plus a session whose one user record is
50 MB of words, with a word of its own ("zebraquux") all through it. memoryd starts as a process
and catches up; then 16 threads each send R recalls of that word at once, so each recall hits
the huge record. It prints memoryd's peak resident memory (VmHWM in /proc/<pid>/status) after the
catch-up and after the recalls, and its resident memory at the end.

With --python-path DIR (a checkout's libs:services), the same runs against another memoryd.

    .venv/bin/python bench/bench_rss.py [--records 20000] [--mb 50] [--rounds 5]
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_index import Generator  # noqa: E402
from bench_startup import Memoryd, _recall, _until  # noqa: E402

WORD = "zebraquux"


def status(pid: int, field: str) -> int:
    """A /proc/<pid>/status figure in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def huge_log(generator: Generator, path: Path, megabytes: int) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    words = []
    size = 0
    while size < megabytes * 1_000_000:
        chunk = f"{WORD} {generator.text(200)}"
        words.append(chunk)
        size += len(chunk) + 1
    record = {"type": "user", "time": "2026-09-20T14:02:11Z", "content": " ".join(words)}
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(record, separators=(",", ":")) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python-path", default=None, help="run another memoryd (libs:services)")
    args = parser.parse_args(argv)
    print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-rss-") as tmp:
        root = Path(tmp)
        generator = Generator()
        home = generator.home(root / "home", args.records)
        huge_log(generator, home.session_log("s-huge"), args.mb)
        size = home.session_log("s-huge").stat().st_size
        print(f"corpus: {args.records} records and one record of {size / 1e6:.1f} MB")
        memoryd = Memoryd(root, args.python_path)
        memoryd.spawn()
        try:
            _until(lambda: _recall(memoryd.broker, WORD))
            while not memoryd.logged(b": caught up, "):
                time.sleep(0.05)
            pid = memoryd.proc.pid
            after_catch_up = status(pid, "VmHWM")
            answers: list[str] = []
            barrier = threading.Barrier(args.clients)

            def client() -> None:
                barrier.wait()
                for _ in range(args.rounds):
                    answers.append(_recall(memoryd.broker, WORD).output)

            threads = [threading.Thread(target=client) for _ in range(args.clients)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - started
            peak = status(pid, "VmHWM")
            hits = sum("session s-huge" in a for a in answers)
            print(f"peak RSS after the catch-up: {after_catch_up / 1024:.0f} MB")
            print(
                f"peak RSS after {len(answers)} recalls ({args.clients} at once, {hits} hit the"
                f" huge record, {elapsed:.2f} s): {peak / 1024:.0f} MB"
            )
            print(f"RSS at the end: {status(pid, 'VmRSS') / 1024:.0f} MB")
        finally:
            memoryd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
