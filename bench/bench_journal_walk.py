"""Benchmark: remove, consolidate and undo over a journal of 100,000 edits, and how long another
session's note waits behind each.

These three need the journal's history: the class of an entry leaving memory.md is that of the
edit that brought it in, and undo needs the edit's line and the file's latest edit. The home built
here makes that history as long as it can be: memory.md holds 20 entries of about 100 characters;
one of them was written by the first edit and kept ever since, the 19 others are replaced one at
a time by the following edits (so each journal line carries 20 entries before and after, as real
identity edits do), all in the current month's file. memoryd runs as a process on it; over its
sockets, as brokerd and bxctl send them, the benchmark times, REPEAT times over:

- remove of the entry kept since the first edit, by a session;
- undo of that remove, by the owner;
- consolidate moving that entry to notes.md, by a session;
- undo of the consolidate, by the owner;

and, for each, a note by another session sent 50 ms after it (so it arrives while the write
runs): the time from sending the note to its answer, and whether it was applied. It also times
memoryd's start to serving on this home twice: the first start builds whatever it keeps about the
journal, the second reuses it; and BLOCKS memory blocks as loopd asks for them at each session's
start (each entry's class is looked up in what memoryd keeps of the journal, so that an entry
above max_class is left out).

    .venv/bin/python bench/bench_journal_walk.py [--edits 100000] [--repeat 3]

To measure other code (the code before a change), run it with PYTHONPATH naming that code's
services/ and libs/: the memoryd it starts is the one its python imports.
"""

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from journals import edit_line  # noqa: E402

from proto.client import request  # noqa: E402
from proto.messages import MemoryAdmin, MemoryBlock, MemoryCall, ToolRequest  # noqa: E402
from tests.memoryd_process import MemorydProcess  # noqa: E402

ENTRIES = 20
KEPT = "kept since the first edit: the owner is Robin, who keeps the NAS backups on Thursdays"
WORDS = ["tea", "backup", "router", "Thursday", "Robin", "NAS", "UTC", "garden", "invoice"]
NOTE_DELAY = 0.05
BLOCKS = 50


def entry(rng: random.Random, n: int) -> str:
    return f"{n}: " + " ".join(rng.choice(WORDS) for _ in range(14))


def build(home: Path, edits: int) -> int:
    """The home: memory.md and a journal of `edits` edits of it; the journal's size in bytes."""
    rng = random.Random(23)
    memory = home / "memory"
    (memory / "edits").mkdir(parents=True, mode=0o700)
    (memory / "recalls").mkdir(mode=0o700)
    month = f"{dt.datetime.now(dt.UTC):%Y-%m}"
    current = [KEPT] + [entry(rng, i) for i in range(1, ENTRIES)]
    path = memory / "edits" / f"{month}.jsonl"
    with open(path, "w") as f:
        for n in range(1, edits + 1):
            if n == 1:
                before: list[str] = []
            else:
                before = list(current)
                current[rng.randrange(1, ENTRIES)] = entry(rng, n)
            line = edit_line(month, n, before, current, "add" if n == 1 else "replace")
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())  # or the first write's fsync of the journal would flush the build
    (memory / "memory.md").write_text("\n§\n".join(current) + "\n")
    return path.stat().st_size


def memory_call(proc: MemorydProcess, session: str, arguments: dict, check: bool = True) -> str:
    req = ToolRequest(
        session=session,
        call_id=f"c-{time.monotonic_ns()}",
        tool="memory",
        arguments=json.dumps(arguments),
    )
    reply = request(
        proc.broker_socket, MemoryCall(request=req, taint="private", untrusted=False), timeout=300
    )
    if check and not reply.ok:
        raise SystemExit(f"{arguments['action']} was refused: {reply.output}")
    return reply.output


def admin(proc: MemorydProcess, command: str, arg: dict) -> str:
    reply = request(
        proc.admin_socket, MemoryAdmin(command=command, arg=json.dumps(arg)), timeout=300
    )
    return reply.text


def last_edit(proc: MemorydProcess, action: str) -> str:
    """The id of the latest edit with this action (the other session's note may come after)."""
    edits = json.loads(admin(proc, "log", {"n": 5, "json": True}))["edits"]
    return [e["id"] for e in edits if e["action"] == action][-1]


def with_a_note(proc: MemorydProcess, write, number: int) -> tuple[float, float, bool]:
    """(seconds the write took, seconds another session's note sent during it waited for its
    answer, whether the note was applied: memoryd answers a write it could not start within its
    write deadline as not applied)."""
    waited: list[tuple[float, bool]] = []

    def note() -> None:
        time.sleep(NOTE_DELAY)
        t0 = time.perf_counter()
        said = memory_call(
            proc, "mm-other01", {"action": "note", "text": f"meanwhile {number}"}, check=False
        )
        waited.append((time.perf_counter() - t0, said.startswith("noted")))

    other = threading.Thread(target=note)
    t0 = time.perf_counter()
    other.start()
    write()
    took = time.perf_counter() - t0
    other.join()
    return took, *waited[0]


def consolidate_away(proc: MemorydProcess) -> None:
    text = Path(proc.home / "memory" / "memory.md").read_text()
    held = [e.strip() for e in text.split("\n§\n") if e.strip()]
    entries = [{"old": e, "move": True} if e == KEPT else {"old": e, "keep": True} for e in held]
    memory_call(
        proc, "mm-writer01", {"action": "consolidate", "file": "memory", "entries": entries}
    )


def start(proc: MemorydProcess) -> float:
    t0 = time.perf_counter()
    proc.start(timeout=900)
    return time.perf_counter() - t0


def report(name: str, times: list[float]) -> None:
    print(
        f"{name}: p50 {statistics.median(times) * 1000:,.1f} ms, "
        f"max {max(times) * 1000:,.1f} ms (n={len(times)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc = MemorydProcess(Path(tmp))
        t0 = time.perf_counter()
        size = build(proc.home, options.edits)
        print(
            f"built: {options.edits:,} edits of memory.md in one month "
            f"({size / 1e6:,.0f} MB journal) in {time.perf_counter() - t0:.1f} s"
        )
        print(f"start to serving, first start on this home: {start(proc):.2f} s")
        proc.stop()
        print(f"start to serving, second start: {start(proc):.2f} s")
        took: dict[str, list[float]] = {}
        waited: dict[str, list[float]] = {}
        refused: dict[str, int] = {}

        def timed(name: str, write, number: int) -> None:
            spent, wait, applied = with_a_note(proc, write, number)
            took.setdefault(name, []).append(spent)
            waited.setdefault(name, []).append(wait)
            refused[name] = refused.get(name, 0) + (not applied)

        try:
            for round_ in range(options.repeat):
                base = round_ * 4
                timed(
                    "remove",
                    lambda: memory_call(
                        proc, "mm-writer01", {"action": "remove", "file": "memory", "old": KEPT}
                    ),
                    base,
                )
                edit = last_edit(proc, "remove")
                timed(
                    "undo of the remove",
                    lambda edit=edit: admin(proc, "undo", {"id": edit}),
                    base + 1,
                )
                timed("consolidate", lambda: consolidate_away(proc), base + 2)
                edit = last_edit(proc, "consolidate")
                timed(
                    "undo of the consolidate",
                    lambda edit=edit: admin(proc, "undo", {"id": edit}),
                    base + 3,
                )
            blocks = []
            for _ in range(BLOCKS):
                t0 = time.perf_counter()
                request(proc.loop_socket, MemoryBlock(), timeout=60)
                blocks.append(time.perf_counter() - t0)
        finally:
            proc.stop()
        report("memory block, as a session starts", blocks)
        for name in took:
            report(name, took[name])
            report(f"  another session's note sent during {name}, its answer after", waited[name])
            if refused[name]:
                print(f"  ({refused[name]} of those notes answered as not applied: too busy)")


if __name__ == "__main__":
    main()
