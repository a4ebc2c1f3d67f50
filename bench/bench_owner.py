"""Benchmark of the owner's view: show and stats over a journal of 100,000 edits.

It builds a home with a journal of N edits (default 100,000) in one month file: each an add,
replace, remove or consolidate of memory.md with 20 entries of about 100 characters before and
after (as real identity edits carry), notes.md with 5,000 notes (1,000 of them moved), and a recall
log of R recalls (default 100,000) in the current month, each with 5 hits. Then it starts memoryd
as a process on it and times, over its owner socket, as bxctl sends them:

- start: memoryd's start to serving (it reads the journal's tail for hand-edit detection);
- show: the first, middle and last edit of the journal (p50 and max over repeats);
- stats: the 30-day counts and sizes;
- log 10000 and pending: answer sizes against MAX_FRAME.

    .venv/bin/python bench/bench_owner.py [--edits 100000] [--recalls 100000] [--repeat 5]
"""

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from journals import edit_line

from memoryd.memory import notes
from proto.client import request  # noqa: E402
from proto.frames import MAX_FRAME  # noqa: E402
from proto.messages import MemoryAdmin  # noqa: E402
from tests.memoryd_process import MemorydProcess  # noqa: E402

ENTRIES = 20


def entry(rng: random.Random, n: int) -> str:
    words = [
        rng.choice(["tea", "backup", "router", "Thursday", "Robin", "NAS", "UTC"])
        for _ in range(14)
    ]
    return f"{n}: " + " ".join(words)


def build(home: Path, edits: int, recalls: int) -> list[str]:
    rng = random.Random(17)
    memory = home / "memory"
    (memory / "edits").mkdir(parents=True, mode=0o700)
    (memory / "recalls").mkdir(mode=0o700)
    now = dt.datetime.now(dt.UTC)
    month = f"{now:%Y-%m}"
    ids = []
    current = [entry(rng, i) for i in range(ENTRIES)]
    with open(memory / "edits" / f"{month}.jsonl", "w") as f:
        for n in range(1, edits + 1):
            before = list(current)
            current[rng.randrange(ENTRIES)] = entry(rng, n)
            line = edit_line(month, n, before, current, "replace")
            ids.append(line["id"])
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    (memory / "memory.md").write_text("\n§\n".join(current) + "\n")
    when = now.replace(second=0, microsecond=0)
    with open(memory / "notes.md", "w") as f:
        for n in range(5_000):
            text = entry(rng, n)
            if n % 5 == 0:
                f.write(notes.moved_or_dropped("moved", text, when, "memory.md", "mm-s0001"))
            else:
                f.write(notes.noted(text, when, "mm-s0001", "private", False))
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(memory / "recalls" / f"{month}.jsonl", "w") as f:
        for _ in range(recalls):
            hits = [
                {
                    "kind": "moved",
                    "session": "mm-s0001",
                    "record": rng.randrange(5_000),
                    "tag": "identity",
                }
                for _ in range(5)
            ]
            f.write(
                json.dumps(  # as recall.log_line writes it
                    {"time": stamp, "session": "mm-s0001", "query": "tea", "k": 5, "hits": hits},
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                + "\n"
            )
    return ids


def timed(proc, command: str, arg: dict) -> tuple[float, int]:
    start = time.perf_counter()
    reply = request(
        proc.admin_socket, MemoryAdmin(command=command, arg=json.dumps(arg)), timeout=60
    )
    return time.perf_counter() - start, len(reply.text.encode())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=100_000)
    parser.add_argument("--recalls", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc = MemorydProcess(Path(tmp))
        t0 = time.perf_counter()
        ids = build(proc.home, options.edits, options.recalls)
        journal = sum(p.stat().st_size for p in (proc.home / "memory/edits").iterdir())
        print(
            f"built: {options.edits:,} edits ({journal / 1e6:.0f} MB journal), "
            f"{options.recalls:,} recalls in {time.perf_counter() - t0:.1f} s"
        )
        t0 = time.perf_counter()
        proc.start(timeout=120)
        print(f"start to serving: {time.perf_counter() - t0:.2f} s")
        try:
            for name, edit_id in (
                ("first", ids[0]),
                ("middle", ids[len(ids) // 2]),
                ("last", ids[-1]),
            ):
                times = [timed(proc, "show", {"id": edit_id})[0] for _ in range(options.repeat)]
                print(
                    f"show {name} edit: p50 {statistics.median(times) * 1000:.0f} ms, "
                    f"max {max(times) * 1000:.0f} ms"
                )
            times = [timed(proc, "stats", {}) for _ in range(options.repeat)]
            print(
                f"stats: p50 {statistics.median(t for t, _ in times) * 1000:.0f} ms, "
                f"max {max(t for t, _ in times) * 1000:.0f} ms, answer {times[0][1]:,} bytes"
            )
            took, size = timed(proc, "log", {"n": 10_000})
            print(
                f"log 10000: {took * 1000:.0f} ms, answer {size:,} bytes "
                f"({size / MAX_FRAME:.0%} of MAX_FRAME)"
            )
        finally:
            proc.stop()


if __name__ == "__main__":
    main()
