"""What memoryd's witness of a session's taint costs.

Before each memory call memoryd reads the calling session's log to its end, on that session's own
thread, never on the writer. Three parts:

- turns: the first call of a session in memoryd's life reads a log of N turns (four records a
  turn) whole; later calls read only what the log gained. In process, the witness alone.
- lines: memoryd as a process; one session's log holds a single tool result of 100, 200, 300 MiB
  whose label (untrusted) comes after the output. Prints the memory call's time and memoryd's peak
  resident memory (VmHWM) against its peak before the call, per size and output kind ("plain": one
  letter; "json": a fetched JSON document, an escaped quote every few bytes).
- starve: memoryd as a process; two sessions whose logs each hold a 300 MiB json line call at once,
  then a third session with no log: how long the third waits, and when the two are answered.

    .venv/bin/python bench/bench_witness.py [--turns 20000] [--sizes 100 200 300] [--part all]
"""

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import memoryd_proc  # noqa: E402

from memoryd.home import Home  # noqa: E402
from memoryd.trust.witness import Witness  # noqa: E402
from proto.client import request  # noqa: E402
from proto.messages import MemoryCall, ToolRequest, ToolResponse  # noqa: E402
from proto.records import AssistantRecord, ToolResultRecord, UserRecord, record_json  # noqa: E402
from tests.hugelog import write_huge_log  # noqa: E402

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


def turns(count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder))
        log = home.session_log(SESSION)
        log.parent.mkdir(parents=True)
        one = turn_lines(0)
        log.write_text(one * count)
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
        # As memoryd makes a call: asked of the session's own reader thread (thread start included).
        fresh = Witness(home)
        start = time.perf_counter()
        fresh.ask(SESSION).result()
        asked = time.perf_counter() - start
        fresh.close()
        # A restart: the point the stop wrote to index/witness.json, read on from.
        home.index_dir.mkdir(exist_ok=True)
        witness.close()
        restarted = Witness(home)
        with open(log, "a") as f:
            f.write(one)
        start = time.perf_counter()
        restarted.stricter(SESSION, "private", False)
        after_restart = time.perf_counter() - start
        # 300 other sessions' calls drop SESSION from the MOST_SEEN kept: its point stays.
        for i in range(300):
            other = f"mm-other{i:04d}"
            (home.sessions / other).mkdir(parents=True)
            home.session_log(other).write_text(one)
            restarted.stricter(other, "private", False)
        with open(log, "a") as f:
            f.write(one)
        start = time.perf_counter()
        restarted.stricter(SESSION, "private", False)
        after_others = time.perf_counter() - start
        restarted.close()
    print(f"log: {count:,} turns, {size / 1e6:.1f} MB")
    print(f"first call (whole log):       {first * 1e3:9.1f} ms")
    print(f"later call, log unchanged:    {unchanged * 1e6:9.1f} us")
    print(f"later call, log grew a turn:  {grown * 1e6:9.1f} us (append included)")
    print(f"first / later (unchanged):    {first / unchanged:9.0f}x")
    print(
        f"first call via ask(), on the session's thread: {asked * 1e3:.1f} ms, none on the writer"
    )
    print(f"first call after a restart:   {after_restart * 1e3:9.1f} ms (the log grew a turn)")
    print(f"after 300 other sessions:     {after_others * 1e3:9.1f} ms (the log grew a turn)")


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise KeyError("VmHWM")


def add(home: Home, session: str) -> tuple[float, ToolResponse]:
    args = json.dumps({"action": "add", "file": "memory", "text": f"A fact from {session}."})
    call = ToolRequest(session=session, call_id="c1", tool="memory", arguments=args)
    start = time.perf_counter()
    reply = request(
        memoryd_proc.sockets(home)["broker"],
        MemoryCall(request=call, taint="private", untrusted=False),
        120.0,
        reply=ToolResponse,
    )
    return time.perf_counter() - start, reply


def verdict(reply: ToolResponse) -> str:
    return (
        "untrusted note"
        if reply.output.startswith("saved as a note (untrusted)")
        else (reply.output[:60])
    )


def lines(sizes: list[int]) -> None:
    print("one line of N MiB, its label after the output; memoryd's peak RSS (VmHWM), 1 call:")
    print(f"{'MiB':>5} {'kind':>6} {'call s':>8} {'MiB/s':>7} {'peak before':>12} {'after':>11}")
    for mib in sizes:
        for kind in ("plain", "json"):
            with tempfile.TemporaryDirectory() as folder:
                root = Path(folder)
                home = Home(root / "home")
                proc = memoryd_proc.start(root, home)
                try:
                    before = peak_kib(proc.pid)
                    write_huge_log(home.session_log(SESSION), mib, kind)
                    seconds, reply = add(home, SESSION)
                    after = peak_kib(proc.pid)
                finally:
                    memoryd_proc.stop(proc)
            print(
                f"{mib:>5} {kind:>6} {seconds:>8.2f} {mib / seconds:>7.0f}"
                f" {before / 1024:>8.1f} MiB {after / 1024:>7.1f} MiB  {verdict(reply)}"
            )


def starve(mib: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        home = Home(root / "home")
        proc = memoryd_proc.start(root, home)
        try:
            for session in ("s-huge1", "s-huge2"):
                write_huge_log(home.session_log(session), mib, "json")
            answered: dict[str, tuple[float, float, ToolResponse]] = {}
            t0 = time.perf_counter()

            def call(session: str) -> None:
                sent = time.perf_counter() - t0
                seconds, reply = add(home, session)
                answered[session] = (sent, sent + seconds, reply)

            threads = [threading.Thread(target=call, args=(s,)) for s in ("s-huge1", "s-huge2")]
            for thread in threads:
                thread.start()
            time.sleep(0.3)
            call("s-nolog")
            for thread in threads:
                thread.join()
            peak = peak_kib(proc.pid)
        finally:
            memoryd_proc.stop(proc)
    print(f"two sessions with a {mib} MiB json line each, then a third with no log (0.3 s later):")
    for session, (sent, done, reply) in answered.items():
        print(
            f"  {session:8} sent at {sent:5.2f} s, answered at {done:5.2f} s"
            f" (waited {done - sent:5.2f} s): {verdict(reply)}"
        )
    print(f"  memoryd's peak RSS: {peak / 1024:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 300])
    parser.add_argument("--part", choices=["all", "turns", "lines", "starve"], default="all")
    options = parser.parse_args()
    if options.part in ("all", "turns"):
        turns(options.turns)
    if options.part in ("all", "lines"):
        lines(options.sizes)
    if options.part in ("all", "starve"):
        starve(max(options.sizes))


if __name__ == "__main__":
    main()
