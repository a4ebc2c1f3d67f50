"""What the term counts cost after each write (vocab.py): counted afresh, or carried over.

The exact top-k (topk.py) needs n(t) for every query term. A commit starts a new index
generation; before, every count was taken again after each write (FTS5 reads a common term's
whole list); now a count is carried over a commit that only added rows, plus the new rows that
hold the term. This appends one record (holding the five commonest words) to a session log and
indexes it, then times generation() and the five words' counts, 30 times, on a home that
bench_recall.py kept.

    .venv/bin/python bench/bench_recall.py --sizes 1000000 --keep DIR     # the home, once
    .venv/bin/python bench/bench_vocab_carry.py DIR/size-1000000/home
    # the code before, beside it: a checkout's libs/ and services/ first on PYTHONPATH
    PYTHONPATH=OLD/libs:OLD/services .venv/bin/python bench/bench_vocab_carry.py DIR/...
"""

import argparse
import sqlite3
import statistics
import time
from pathlib import Path

from bench_recall import WRITER, ZipfGenerator

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.search import vocab
from proto.records import UserRecord, append_session_record

ROUNDS = 30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    home = Home(parser.parse_args().home)
    common = ZipfGenerator().words[:5]
    index = Index(home)
    index.open()
    conn = sqlite3.connect(home.index_db, isolation_level=None)
    vocab.ensure_vocab(conn)
    times = []
    for n in range(ROUNDS):
        record = UserRecord(time="2026-11-30T09:00:00Z", content=f"carry {n} {' '.join(common)}")
        append_session_record(home.session_log(WRITER), record)
        index.catch_up_session(WRITER)
        conn.execute("BEGIN")
        started = time.perf_counter()
        stats = vocab.generation(conn)
        counts = [vocab.docs(conn, stats, word, word) for word in common]
        times.append((time.perf_counter() - started) * 1e3)
        conn.execute("COMMIT")
    conn.close()
    index.close()
    print(f"rows {stats.rows:,}; the five commonest words' rows: {counts}")
    print(f"first round {times[0]:.2f} ms (nothing to carry)")
    print(
        f"after each write: median {statistics.median(times[1:]):.2f} ms,"
        f" max {max(times[1:]):.2f} ms ({ROUNDS - 1} writes)"
    )


if __name__ == "__main__":
    main()
