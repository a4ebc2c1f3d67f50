"""Benchmark of `bxctl memory stats` on a home that kept tens of thousands of sessions.

stats says which logs hold bytes the index has not read and how big sessions/ is, so it looks at
every session log; this times that look. It makes a home with N session logs of one line each
(default 60,000; a year of chat threads, one session each), opens the index on it in process and
times stats' collect, p50 of a few calls after one that warms the caches.

    .venv/bin/python bench/bench_stats_logs.py [--logs 60000] [--repeat 5] [--tree DIR]

--tree runs another checkout's memoryd (its libs/ and services/ first on the path), to compare two
versions in one run on the same machine.
"""

import argparse
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

LINE = '{"type":"user","time":"2026-12-01T00:00:00Z","content":"hi"}\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree / "libs"), str(tree / "services"), str(tree)]
    from memoryd.owner import stats
    from tests.memoryd.owner_data_harness import Memoryd

    root = Path(tempfile.mkdtemp(prefix="bench-stats-"))
    try:
        md = Memoryd(root / "home")
        home = md.index.home
        for i in range(args.logs):
            folder = home.sessions / f"s-{i:06d}"
            folder.mkdir(parents=True, mode=0o700)
            (folder / "0.jsonl").write_text(LINE)
        now = dt.datetime.now(dt.UTC)
        stats.collect(home, 30, now, md.index)
        times = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            found = stats.collect(home, 30, now, md.index)
            times.append(time.perf_counter() - began)
        md.close()
        print(
            f"{tree.name}: stats with {args.logs:,} session logs: p50 "
            f"{1000 * statistics.median(times):.0f} ms, max {1000 * max(times):.0f} ms "
            f"(sessions/ {found['sizes']['sessions/']:,} bytes)"
        )
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
