"""What memoryd's witness of a session's taint costs.

Before each memory call memoryd reads the calling session's log to its end. The first call of a
session in memoryd's life reads the whole log; later calls read only what the log gained. This
prints both, for a log of N turns (four records a turn), and the cost of one turn's growth; then
how memoryd splits a first call: the whole read ahead of the writer, the tail on it.

    .venv/bin/python bench/bench_witness.py [--turns 20000]
"""

import argparse
import tempfile
import time
from pathlib import Path

from memoryd.home import Home
from memoryd.trust.witness import Witness
from proto.records import AssistantRecord, ToolResultRecord, UserRecord, record_json

SESSION = "mm-bench0001"


def turn_lines(n: int) -> str:
    t = "2026-09-20T14:02:11Z"
    records = [
        UserRecord(time=t, content=f"turn {n}: the launch window moved to Thursday " * 3),
        AssistantRecord(
            time=t,
            tool_calls=[{"id": f"c{n}", "name": "read_file", "arguments": '{"path": "/srv/x"}'}],
        ),
        ToolResultRecord(
            time=t,
            call_id=f"c{n}",
            name="read_file",
            output="x" * 400,
            klass="private",
            untrusted=False,
        ),
        AssistantRecord(time=t, content="Noted: Thursday. " * 5),
    ]
    return "".join(record_json(r) + "\n" for r in records)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder))
        log = home.session_log(SESSION)
        log.parent.mkdir(parents=True)
        one = turn_lines(0)
        log.write_text(one * options.turns)
        size = log.stat().st_size
        witness = Witness(home)
        start = time.perf_counter()
        witness.stricter(SESSION, "private", False)
        first = time.perf_counter() - start
        start = time.perf_counter()
        rounds = 1000
        for _ in range(rounds):
            witness.stricter(SESSION, "private", False)
        unchanged = (time.perf_counter() - start) / rounds
        start = time.perf_counter()
        for _ in range(rounds):
            with open(log, "a") as f:
                f.write(one)
            witness.stricter(SESSION, "private", False)
        grown = (time.perf_counter() - start) / rounds
        # As memoryd makes a session's first call: the whole read ahead, off the writer thread
        # (service._read_ahead), then the writer's read of what came meanwhile (a turn here).
        fresh = Witness(home)
        start = time.perf_counter()
        fresh.read_ahead(SESSION)
        ahead = time.perf_counter() - start
        with open(log, "a") as f:
            f.write(one)
        start = time.perf_counter()
        fresh.stricter(SESSION, "private", False)
        on_writer = time.perf_counter() - start
    print(f"log: {options.turns:,} turns, {size / 1e6:.1f} MB")
    print(f"first call (whole log):       {first * 1e3:9.1f} ms")
    print(f"later call, log unchanged:    {unchanged * 1e6:9.1f} us")
    print(f"later call, log grew a turn:  {grown * 1e6:9.1f} us (append included)")
    print(f"first / later (unchanged):    {first / unchanged:9.0f}x")
    print(f"first call in memoryd: read ahead {ahead * 1e3:.1f} ms off the writer, then")
    print(f"  {on_writer * 1e6:.1f} us on the writer (the writer's share: {on_writer / ahead:.4%})")


if __name__ == "__main__":
    main()
