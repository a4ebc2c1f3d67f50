"""Benchmark: exact top-k recall over memoryd's socket against the spec's plain query.

For each size (records in session logs; default 10 thousand, 100 thousand and a million) it
generates a home with words drawn from a Zipf distribution over a 30,000-word vocabulary
(bench_index's generator and layout), builds the index (Index.reindex, in this process), starts
memoryd as a process on it, and runs queries of 2 to 6 words drawn from the commoner half of the
vocabulary, k = 5 (--mix bench: distinct words; --mix zipf: each word drawn evenly on its own, from
a stream of queries of its own; --mix text: each word drawn as words occur in the text, by its
Zipf weight over the whole vocabulary, so that most queries hold one of the few words most rows
hold, as a question's "the" or "what" would):

- recall over memoryd's brokerd socket (connect, frame, validation, search, snippets, rendering,
  label, recall log line), p50 and p99;
- the spec's plain FTS5 query (recall.SEARCH) run directly on the same file with sqlite3, p50 and
  p99, interleaved with the socket's in the same run;
- for every query, the rowids of the exact top-k (topk.best_rowids) against the plain query's:
  all must be equal but for the order of rows of exactly equal bm25 (recall orders those by what
  the rows are, search/ties.py; FTS5 by rowid); and how many queries the fast path answered (the
  rest fell back).

With --write-between, before each recall over the socket a record is appended to a session log
of its own and memoryd is told (session_updated, answered once the index has committed it), as
while sessions run: every recall then meets an index that changed since the last one.

    .venv/bin/python bench/bench_recall.py [--sizes 10000,100000,1000000] [--queries 500]
                                           [--write-between] [--mix bench|zipf|text] [--keep DIR]
"""

import argparse
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import memoryd_proc
from bench_index import Generator, percentile

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.recall.recaller import SEARCH
from memoryd.search import topk
from memoryd.search.query import match_expression, query_terms
from proto.client import request
from proto.messages import MemoryCall, Ok, SessionUpdated, ToolRequest
from proto.records import UserRecord, append_session_record

VOCABULARY = 30_000
K = 5


class ZipfGenerator(Generator):
    """bench_index's generator over a 30,000-word vocabulary; queries from its commoner half."""

    def __init__(self, seed: int = 14):
        super().__init__(seed)
        letters = "abcdefghijklmnopqrstuvwxyz"
        words: set[str] = set()
        while len(words) < VOCABULARY:
            words.add("".join(self.rng.choices(letters, k=self.rng.randint(3, 9))))
        self.words = sorted(words)
        self.rng.shuffle(self.words)
        self.weights = [1.0 / (rank + 1) for rank in range(VOCABULARY)]
        total = 0.0
        self.cumulative = []
        for weight in self.weights:
            total += weight
            self.cumulative.append(total)

    def query(self) -> str:
        return " ".join(self.rng.sample(self.words[: VOCABULARY // 2], self.rng.randint(2, 6)))

    def queries(self, mix: str, n: int) -> list[str]:
        """n queries of the mix: "bench", this benchmark's own (distinct words, from the
        generator's stream); "zipf", 2 to 6 words each drawn evenly and on its own from the 15,000
        commonest, from a stream of its own (the same queries whether the home was kept or not);
        "text", 2 to 6 words each drawn by its weight in the text, from a stream of its own."""
        if mix == "bench":
            return [self.query() for _ in range(n)]
        if mix == "text":
            rng = random.Random(29)
            return [
                " ".join(rng.choices(self.words, weights=self.weights, k=rng.randint(2, 6)))
                for _ in range(n)
            ]
        rng = random.Random(23)
        common = self.words[: VOCABULARY // 2]
        return [" ".join(rng.choices(common, k=rng.randint(2, 6))) for _ in range(n)]


def _recall_over(sock: Path, text: str) -> None:
    req = ToolRequest(
        session="bench", call_id="c", tool="recall", arguments=json.dumps({"query": text, "k": K})
    )
    reply = request(sock, MemoryCall(request=req, taint="private", untrusted=False))
    if not reply.ok:
        raise SystemExit(f"recall failed: {reply.output}")


def _same_but_ties(conn: sqlite3.Connection, expression: str, found: list[int], plain: list[int]):
    """Whether found differs from the plain query's rows only among rows of exactly equal bm25,
    which recall orders by what the rows are (search/ties.py) and FTS5 by rowid: the same
    scores, position by position, each row's own."""

    def scores(rowids: list[int]) -> list[float | None]:
        one = "SELECT bm25(hits) FROM hits WHERE hits MATCH ? AND rowid = ?"
        return [(conn.execute(one, (expression, r)).fetchone() or (None,))[0] for r in rowids]

    return len(found) == len(plain) and scores(found) == scores(plain)


def _compare(home: Home, queries: list[str], write_between: bool) -> tuple[int, int]:
    """(queries whose fast answer equals the plain one, queries the fast path answered); with
    write_between, a record indexed (in this process) before each, so that the counts kept from
    one index generation to the next are what is compared."""
    index = Index(home)
    index.open()
    conn = sqlite3.connect(home.index_db, isolation_level=None)
    equal = answered = 0
    for n, text in enumerate(queries):
        if write_between:
            log = home.session_log(WRITER)
            append_session_record(
                log, UserRecord(time="2026-11-30T09:00:00Z", content=f"compare {n} {text}")
            )
            index.catch_up_session(WRITER)
        terms, expression = query_terms(text), match_expression(text)
        conn.execute("BEGIN")
        try:
            fast = topk.fast(conn, terms, K)
            found = topk.best_rowids(conn, terms, expression, K)
            plain = topk.plain(conn, expression, K)
        finally:
            conn.execute("COMMIT")
        answered += fast is not None
        equal += found == plain or _same_but_ties(conn, expression, found, plain)
    conn.close()
    index.close()
    return equal, answered


WRITER = "bench-writer"


def _write_one(home: Home, loop_sock: Path, n: int) -> None:
    """Append a record to the writer session's log and wait until memoryd has indexed it."""
    log = home.session_log(WRITER)
    log.parent.mkdir(parents=True, exist_ok=True)
    append_session_record(
        log, UserRecord(time="2026-11-30T09:00:00Z", content=f"writer record {n} kestrel heron")
    )
    request(loop_sock, SessionUpdated(session=WRITER), reply=Ok)


def bench_size(
    records: int, queries: int, root: Path, write_between: bool = False, mix: str = "bench"
) -> None:
    generator = ZipfGenerator()
    started = time.perf_counter()
    if (root / "home").is_dir():  # kept from an earlier run (--keep): the same seed, same home
        home = Home(root / "home")
        print(f"size {records}: reusing {home.root}")
    else:
        home = generator.home(root / "home", records)
        index = Index(home)
        index.open()
        index.reindex()
        index.close()
        print(f"size {records}: generated and indexed in {time.perf_counter() - started:.1f} s")
    proc = memoryd_proc.start(root, home, wait=("loop", "broker"))
    sock, loop_sock = memoryd_proc.sockets(home)["broker"], memoryd_proc.sockets(home)["loop"]
    try:
        texts = generator.queries(mix, queries)
        direct = sqlite3.connect(home.index_db)
        for text in texts[:20]:  # warm the page cache for both
            _recall_over(sock, text)
            direct.execute(SEARCH, (match_expression(text), K)).fetchall()
        times: dict[str, list[float]] = {"socket": [], "plain": []}
        for n, text in enumerate(texts):
            if write_between:
                _write_one(home, loop_sock, n)
            for which in ("socket", "plain") if n % 2 else ("plain", "socket"):
                t0 = time.perf_counter()
                if which == "socket":
                    _recall_over(sock, text)
                else:
                    direct.execute(SEARCH, (match_expression(text), K)).fetchall()
                times[which].append(time.perf_counter() - t0)
        direct.close()
    finally:
        memoryd_proc.stop(proc)
    print(f"size {records}: query mix {mix}, {len(texts)} queries")
    if write_between:
        print(f"size {records}: a record written and indexed before each recall")
    for p in (50, 99):
        s, d = percentile(times["socket"], p), percentile(times["plain"], p)
        print(
            f"size {records}: recall p{p} over the socket {s * 1e3:.3f} ms,"
            f" plain FTS5 query p{p} {d * 1e3:.3f} ms, ratio {s / d:.3f}"
        )
    print(
        f"size {records}: max over the socket {max(times['socket']) * 1e3:.3f} ms,"
        f" plain {max(times['plain']) * 1e3:.3f} ms"
    )
    equal, answered = _compare(home, texts, write_between)
    print(
        f"size {records}: answers equal to the plain query's: {equal} of {len(texts)};"
        f" fast path {answered}, fallback to the plain query {len(texts) - answered}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument(
        "--keep", type=Path, help="build each size's home under this folder and keep it"
    )
    parser.add_argument(
        "--write-between", action="store_true", help="a record written before each recall"
    )
    parser.add_argument(
        "--mix",
        choices=("bench", "zipf", "text"),
        default="bench",
        help="bench: distinct words from the commoner half (this benchmark's own); zipf: each"
        " word drawn evenly from the 15,000 commonest, on its own; text: each word drawn by its"
        " weight in the text",
    )
    args = parser.parse_args(argv)
    print(
        f"cpus {os.cpu_count()}, python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        if args.keep is not None:
            root = args.keep / f"size-{size}"
            root.mkdir(parents=True, exist_ok=True)
            bench_size(size, args.queries, root, args.write_between, args.mix)
            continue
        with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
            bench_size(size, args.queries, Path(tmp), args.write_between, args.mix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
