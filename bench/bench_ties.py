"""Benchmark: recall over a home of repeated requests, where hundreds of thousands of rows tie.

An owner who asks the same things every day ("remind me to water the plants on the balcony")
fills memory with rows of one length and one bm25 for each of their words. Recall puts rows of
equal score in the order of what they are, the newer first (search/ties.py): this measures what
that costs against the spec's plain FTS5 query, whose ties fall in rowid order, at each size
(records in session logs, five templates with a number each, times in no order of the rowids):

- recall over memoryd's brokerd socket, p50, p99 and max, interleaved with the plain query run
  directly on the same file with sqlite3;
- for every query, whether recall's rows are the plain query's scores, position by position, and
  the newest of each run of equal scores (the reference: the spec's query joined to sources and
  ordered by bm25, time, kind, session, record and rowid in SQL).

    PYTHONPATH=bench .venv/bin/python bench/bench_ties.py [--sizes 100000,1000000] [--rounds 5]
"""

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import memoryd_proc
from bench_index import Generator, percentile
from bench_recall import _recall_over

from memoryd.index.index import Index
from memoryd.recall.recaller import SEARCH
from memoryd.search import topk
from memoryd.search.query import match_expression, query_terms

USER = [
    "remind me to water the plants on the balcony {n}",
    "what is the weather like today in the city {n}",
    "please add milk and eggs to the shopping list {n}",
]
ASSISTANT = [
    "sure I will remind you to water the plants {n}",
    "the weather today is sunny with a light breeze {n}",
]
QUERIES = [
    "water plants",
    "weather today sunny",
    "milk eggs",
    "balcony",
    "remind plants",
    "the city",
    "shopping list milk",
]
K = 5
REFERENCE = (
    "SELECT h.rowid FROM hits h JOIN sources s ON s.rowid = h.rowid WHERE hits MATCH ?"
    " ORDER BY h.rank, s.time DESC, s.kind, s.session, s.record, h.rowid LIMIT ?"
)


class Repeated(Generator):
    """Session logs of the templates, a user's request and the assistant's answer in turn."""

    def record(self, number: int) -> str:
        when = f"2026-09-{1 + number * 7 % 28:02d}T{number * 5 % 24:02d}:{number % 60:02d}:00Z"
        if number % 2 == 0:
            text = USER[(number // 2) % len(USER)].format(n=number)
            body = {"type": "user", "time": when, "content": text}
        else:
            text = ASSISTANT[(number // 2) % len(ASSISTANT)].format(n=number)
            body = {"type": "assistant", "time": when, "content": text}
        return json.dumps(body, separators=(",", ":"))


def bench_size(records: int, rounds: int, root: Path) -> None:
    started = time.perf_counter()
    home = Repeated().home(root / "home", records)
    index = Index(home)
    index.open()
    index.reindex()
    index.close()
    print(f"size {records}: generated and indexed in {time.perf_counter() - started:.1f} s")
    direct = sqlite3.connect(home.index_db)
    proc = memoryd_proc.start(root, home, wait=("loop", "broker"))
    sock = memoryd_proc.sockets(home)["broker"]
    times: dict[str, list[float]] = {"socket": [], "plain": []}
    try:
        for text in QUERIES:  # warm the page cache for both
            _recall_over(sock, text)
            direct.execute(SEARCH, (match_expression(text), K)).fetchall()
        for n in range(rounds):
            for text in QUERIES:
                for which in ("socket", "plain") if n % 2 else ("plain", "socket"):
                    t0 = time.perf_counter()
                    if which == "socket":
                        _recall_over(sock, text)
                    else:
                        direct.execute(SEARCH, (match_expression(text), K)).fetchall()
                    times[which].append(time.perf_counter() - t0)
    finally:
        memoryd_proc.stop(proc)
    matches = {
        text: direct.execute(
            "SELECT count(*) FROM hits WHERE hits MATCH ?", (match_expression(text),)
        ).fetchone()[0]
        for text in QUERIES
    }
    print(f"size {records}: rows matching each query: {matches}")
    for p in (50, 99):
        s, d = percentile(times["socket"], p), percentile(times["plain"], p)
        print(
            f"size {records}: recall p{p} over the socket {s * 1e3:.1f} ms,"
            f" plain FTS5 query p{p} {d * 1e3:.1f} ms, ratio {s / d:.2f}"
        )
    print(
        f"size {records}: max over the socket {max(times['socket']) * 1e3:.1f} ms,"
        f" plain {max(times['plain']) * 1e3:.1f} ms"
    )
    same = 0
    for text in QUERIES:
        expression = match_expression(text)
        direct.execute("BEGIN")
        try:
            found = topk.best_rowids(direct, query_terms(text), expression, K)
        finally:
            direct.execute("COMMIT")
        want = [rowid for (rowid,) in direct.execute(REFERENCE, (expression, K))]
        same += found == want
    direct.close()
    print(
        f"size {records}: answers equal to the reference's, ties in order: {same} of {len(QUERIES)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-ties-") as tmp:
            bench_size(size, args.rounds, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
