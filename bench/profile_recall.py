"""Where recall's time goes, query by query: the slowest queries of a run, in process.

Runs bench_recall's queries (same seed, same generator) through recall.search on an index built by
`bench_recall.py --keep DIR`, and prints the slowest ones with the row counts of their terms, the
path that answered (fast, or why it fell back) and the time spent counting terms (the first count
of a common term in this generation) and in the fallback query, and the CPU time of the thread
(steadier than wall time on a shared machine). It also counts the paths.

    .venv/bin/python bench/profile_recall.py DIR/size-1000000/home/index/memory.sqlite3
                                             [--mix bench|zipf] [--queries 500] [--by-cpu]
"""

import argparse
import collections
import sqlite3
import sys
import time

from bench_index import percentile
from bench_recall import K, ZipfGenerator

from memoryd.recall import recaller as recall
from memoryd.search import bm25, topk, vocab
from memoryd.search.query import Query, query_terms


class Timed:
    """Wraps a module function, adding its time to a per-query account."""

    def __init__(self, module, name: str, account: dict):
        self.inner = getattr(module, name)
        self.name = name
        self.account = account
        setattr(module, name, self)

    def __call__(self, *args):
        started = time.perf_counter()
        try:
            return self.inner(*args)
        finally:
            self.account[self.name] = self.account.get(self.name, 0.0) + (
                time.perf_counter() - started
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--show", type=int, default=12)
    parser.add_argument("--mix", choices=("bench", "zipf"), default="bench")
    parser.add_argument(
        "--by-cpu", action="store_true", help="the slowest by this thread's CPU time, not wall"
    )
    args = parser.parse_args(argv)
    generator = ZipfGenerator()
    texts = generator.queries(args.mix, args.queries)
    conn = sqlite3.connect(args.index, isolation_level=None)
    account: dict[str, float] = {}
    Timed(vocab, "docs", account)
    Timed(topk, "fallback", account)
    split = Timed(topk, "split", account)
    found: list[tuple] = []
    paths: collections.Counter = collections.Counter()
    for text in texts:
        account.clear()
        started, cpu = time.perf_counter(), time.thread_time()
        recall.search(conn, Query.parse(text), K)
        took = time.perf_counter() - started
        account["cpu"] = time.thread_time() - cpu
        stats = vocab.generation(conn)
        docs = sorted(
            (stats.docs.get(vocab.tokens(t)[0], 0) for t in query_terms(text)), reverse=True
        )
        if "fallback" not in account:
            path = "fast"
        elif sum(set(docs)) <= topk.PLAIN_BELOW:
            path = f"fallback: at most {topk.PLAIN_BELOW} rows"
        elif "split" in account and split.inner(*_split_args(stats, text)) is None:
            path = "fallback: no split"
        else:
            path = "fallback: tried, not proved"
        paths[path] += 1
        found.append((took, path, docs, dict(account)))
    conn.close()
    found.sort(key=lambda item: -item[3]["cpu"] if args.by_cpu else -item[0])
    for name, values in (
        ("wall", sorted(item[0] for item in found)),
        ("cpu", sorted(item[3]["cpu"] for item in found)),
    ):
        print(
            f"{len(found)} queries, {name} time: p50 {percentile(values, 50) * 1e3:.1f} ms,"
            f" p90 {percentile(values, 90) * 1e3:.1f} ms, p99 {percentile(values, 99) * 1e3:.1f} ms"
        )
    for path, count in paths.most_common():
        print(f"  {path}: {count}")
    print("slowest (the first query of a process also pays bm25's self-check):")
    for took, path, docs, spent in found[: args.show]:
        parts = ", ".join(f"{name} {value * 1e3:.1f} ms" for name, value in spent.items())
        print(f"  {took * 1e3:.1f} ms  {path}  rows per term {docs}  ({parts})")
    return 0


def _split_args(stats: vocab.Stats, text: str) -> tuple:
    tokens = [vocab.tokens(term)[0] for term in query_terms(text)]
    docs = {token: stats.docs.get(token, 0) for token in tokens}
    weight_of = dict.fromkeys(docs, 0.0)
    for token in tokens:
        weight_of[token] += bm25.idf(stats.rows, docs[token])
    return docs, weight_of, sum(docs.values())


if __name__ == "__main__":
    sys.exit(main())
