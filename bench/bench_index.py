"""Benchmark of memoryd's index: reindex speed, catch-up cost, recall latency.

For each size (records in session logs; default 10 thousand, 100 thousand and a million) it
generates a home in a temporary folder: one long session holding half the records, sessions of
1,000 records for the rest, a session of 10 records, and a notes.md. Then it prints, as plain
lines:

- reindex: records read per second (all records, tool results included) and rows indexed per
  second;
- catch-up: the cost of indexing two new records appended to the 10-record log and to the long
  log, and their ratio (flat means near 1);
- recall: latency p50 and p99 of recall (recall_on: search, sources, snippets, lines, label and the
  fsync'd recall log line) next to the same FTS5 query run directly on the same database file
  with the standard library (recall.SEARCH), and their ratios.

    .venv/bin/python bench/bench_index.py [--sizes 10000,100000,1000000] [--queries 300]

The reindex runs twice: as it is, then after a forget (one digest in forgotten.jsonl), when the
indexer digests every row's text to leave out records that held a forgotten one.
"""

import argparse
import itertools
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.recalling

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from memoryd.journal.forgetlines import digest
from memoryd.recall.recaller import SEARCH
from memoryd.search.query import match_expression
from tests.recalling import recall_on

VOCABULARY = 20_000
SESSION_RECORDS = 1_000


def _words(rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(VOCABULARY)})
    rng.shuffle(words)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]  # Zipf: a few words are common
    return words, weights


class Generator:
    """Writes session logs as JSON lines directly (fast), in the design's record format."""

    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)
        self.words, self.weights = _words(self.rng)
        self.cumulative = list(itertools.accumulate(self.weights))

    def text(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=n))

    def record(self, number: int) -> str:
        time_ = f"2026-09-{1 + number % 28:02d}T{number % 24:02d}:{number % 60:02d}:00Z"
        step = number % 4
        if step == 0:
            body = {"type": "user", "time": time_, "content": self.text(self.rng.randint(5, 40))}
        elif step == 1:
            arguments = json.dumps({"path": f"/srv/notes/{self.text(1)}.txt"})
            call = {"id": f"c{number}", "name": "read_file", "arguments": arguments}
            body = {"type": "assistant", "time": time_, "content": None, "tool_calls": [call]}
        elif step == 2:
            body = {
                "type": "tool_result",
                "time": time_,
                "call_id": f"c{number - 1}",
                "name": "read_file",
                "output": self.text(60),
                "class": "private",
                "untrusted": self.rng.random() < 0.01,
            }
        else:
            body = {"type": "assistant", "time": time_, "content": self.text(30)}
        return json.dumps(body, separators=(",", ":"))

    def log(self, path: Path, records: int, first: int = 0) -> None:
        ensure_dir(path.parent)
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(self.record(n) + "\n" for n in range(first, first + records))

    def home(self, root: Path, records: int) -> Home:
        home = Home(root)
        long = records // 2
        self.log(home.session_log("long"), long)
        self.log(home.session_log("short"), 10)
        rest = records - long - 10
        for number in range(0, rest, SESSION_RECORDS):
            self.log(home.session_log(f"mm-{number:08d}"), min(SESSION_RECORDS, rest - number))
        ensure_dir(home.memory)
        with open(home.memory_file("notes.md"), "w", encoding="utf-8") as f:
            for n in range(max(1, records // 1000)):
                tail = " · untrusted" if n % 3 == 0 else ""
                f.write(f"§ noted 2026-09-22T18:20Z in session mm-{n} · private{tail}\n")
                f.write(self.text(20) + "\n")
        return home

    def query(self) -> str:
        return " ".join(self.rng.sample(self.words[:5000], self.rng.randint(1, 3)))


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def bench_size(records: int, queries: int, root: Path) -> None:
    generator = Generator()
    started = time.perf_counter()
    home = generator.home(root, records)
    print(f"size {records}: generated in {time.perf_counter() - started:.1f} s")

    index = Index(home)
    index.open()
    for forgot in range(2):  # without a forget, then with one: every row's text digested
        started = time.perf_counter()
        logs, rows, notes = index.reindex()
        elapsed = time.perf_counter() - started
        print(
            f"size {records}: reindex{' after a forget' if forgot else ''} {logs} logs,"
            f" {records} records, {rows} rows, {notes} notes in {elapsed:.2f} s:"
            f" {records / elapsed:,.0f} records/s, {(rows + notes) / elapsed:,.0f} rows/s"
        )
        if not forgot:
            line = {"digest": digest("a text the owner forgot"), "time": "2099-01-01T00:00Z"}
            (home.memory / "forgotten.jsonl").write_text(json.dumps(line) + "\n")

    costs = {}
    for session, length in (("short", 10), ("long", records // 2)):
        timings = []
        for round_ in range(20):
            generator.log(home.session_log(session), 2, first=length + 2 * round_)
            started = time.perf_counter()
            index.catch_up_session(session)
            timings.append(time.perf_counter() - started)
        costs[session] = statistics.median(timings)
        print(
            f"size {records}: catch-up of 2 new records, log of {length} records:"
            f" {costs[session] * 1e3:.3f} ms (median of 20)"
        )
    print(f"size {records}: catch-up ratio long/short log: {costs['long'] / costs['short']:.2f}")

    direct = sqlite3.connect(home.index_db)
    texts = [generator.query() for _ in range(queries)]
    for text in texts[:20]:  # warm the page cache for both
        direct.execute(SEARCH, (match_expression(text), 5)).fetchall()
        recall_on(index, text, 5, session="bench")
    direct_times, recall_times = [], []
    for n, text in enumerate(texts):
        for which in ("direct", "recall") if n % 2 else ("recall", "direct"):
            started = time.perf_counter()
            if which == "direct":
                direct.execute(SEARCH, (match_expression(text), 5)).fetchall()
                direct_times.append(time.perf_counter() - started)
            else:
                recall_on(index, text, 5, session="bench")
                recall_times.append(time.perf_counter() - started)
    direct.close()
    for p in (50, 99):
        d, r = percentile(direct_times, p), percentile(recall_times, p)
        print(
            f"size {records}: recall p{p} {r * 1e3:.3f} ms, direct FTS5 p{p} {d * 1e3:.3f} ms,"
            f" ratio {r / d:.3f}"
        )
    index.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
            bench_size(size, args.queries, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
