"""Benchmark of the owner's data commands on a big home: backup, restore and forget.

It builds a home with R session records (default 100,000; --records 1000000 for the figure the
issue asks, which takes several minutes to index on a shared machine), written by
bench_index.Generator (half in one long log, the rest in logs of 1,000), notes.md with R/1000
notes, an edit journal of R/100 identity edits (each with its file's 20 entries before and after,
as real edits carry) and a recall log of R/10 lines. memoryd runs in this process (store, index,
service, the writer thread), and while each command runs a second thread sends a note every
10 ms through the writer, so the figures include what a write waited:

- backup: the time, the archive's size (and the files' size: the generated journal repeats few
  words, so it compresses far better than a real one), how long the snapshot held the writer,
  and the longest wait of a concurrent write (with and without --with-sessions);
- restore: the archive into an empty home (read and checked whole, laid, notes.md indexed again);
- forget: an entry that every journal line carries (the worst case: every month rewritten), a
  note, and a session record, each with the merge of the index's full-text tables that drops
  the forgotten rows' words (in steps: the longest step is printed).

    .venv/bin/python bench/bench_owner_data.py [--records 100000] [--mode spec|context]

--mode context measures the forget's merge on an index with context's table too (the rows and
their neighbours' text, about twice the full-text lists to merge).
"""

import argparse
import datetime as dt
import functools
import json
import os
import random
import shutil
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_index import Generator  # noqa: E402

from memoryd.data import ftsmerge  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.writer import WRITE  # noqa: E402
from tests.memoryd import owner_data_harness  # noqa: E402
from tests.memoryd.owner_data_harness import Memoryd  # noqa: E402

ENTRIES = 20


def journal(home: Path, edits: int, rng: random.Random) -> None:
    """edits replace-lines in this month's journal; memory.md left as the last one left it. Its
    first entry is never replaced, so every line carries it (forget's worst case)."""
    month = f"{dt.datetime.now(dt.UTC):%Y-%m}"
    words = ["tea", "backup", "router", "Thursday", "Robin", "NAS", "UTC", "launch"]

    def entry(n: int) -> str:
        return f"{n}: " + " ".join(rng.choice(words) for _ in range(12))

    current = [entry(i) for i in range(ENTRIES)]
    folder = home / "memory" / "edits"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(folder / f"{month}.jsonl", "w") as f:
        for n in range(1, edits + 1):
            before = list(current)
            current[1 + rng.randrange(ENTRIES - 1)] = entry(n + ENTRIES)
            line = {
                "id": f"{month}-01-{n:06d}", "time": f"{month}-01T00:00:00Z",
                "session": f"mm-s{n % 977:04d}", "call": f"c{n}", "taint": "private",
                "untrusted": False, "action": "replace", "file": "memory.md", "to": "memory.md",
                "before": before, "after": list(current), "notes": [],
            }  # fmt: skip
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    (home / "memory" / "memory.md").write_text("\n§\n".join(current) + "\n")


def recalls(home: Path, lines: int) -> None:
    month = f"{dt.datetime.now(dt.UTC):%Y-%m}"
    folder = home / "memory" / "recalls"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    hit = {"kind": "session", "session": "long", "record": 3, "tag": "memory"}
    with open(folder / f"{month}.jsonl", "w") as f:
        for n in range(lines):
            line = {"time": f"{month}-01T00:00:00Z", "session": "s", "query": f"q {n}", "k": 5,
                    "hits": [hit] * 5}  # fmt: skip
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def _stamp(into: list[float]) -> None:
    into.append(time.perf_counter())


class Writes:
    """A note through the writer every 10 ms; the longest a note waited to start."""

    def __init__(self, m: Memoryd):
        self.m, self.longest, self.count = m, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            sent = time.perf_counter()
            started: list[float] = []
            self.m.service._writer.submit(WRITE, _stamp, started)
            while not started and not self._stop.is_set():
                time.sleep(0.0005)
            if started:
                self.longest = max(self.longest, started[0] - sent)
                self.count += 1
            time.sleep(0.01)

    def __enter__(self) -> "Writes":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


class MergeSteps:
    """The time of each step of a forget's merge (ftsmerge._step, wrapped)."""

    def __init__(self) -> None:
        self.took: list[float] = []
        real = ftsmerge._step

        def step(index, table, pages, *rest):
            started = time.perf_counter()
            try:
                return real(index, table, pages, *rest)
            finally:
                self.took.append(time.perf_counter() - started)

        ftsmerge._step = step  # type: ignore[assignment]


def timed(m: Memoryd, command: str, **arg) -> tuple[dict, float, float]:
    with Writes(m) as writes:
        started = time.perf_counter()
        out = m.data(command, **arg)
        took = time.perf_counter() - started
    return out, took, writes.longest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--mode", choices=("spec", "context"), default="spec")
    args = parser.parse_args(argv)
    n = args.records
    owner_data_harness.Index = functools.partial(Index, mode=args.mode)  # type: ignore[misc]
    steps = MergeSteps()
    root = Path(tempfile.mkdtemp(prefix="bench-owner-data-"))
    try:
        home = root / "home"
        gen = Generator()
        gen.home(home, n)
        journal(home, max(10, n // 100), random.Random(3))
        recalls(home, n // 10)
        started = time.perf_counter()
        m = Memoryd(home)
        print(f"home ({args.mode} mode): {n:,} session records, {max(1, n // 1000):,} notes, "
              f"{max(10, n // 100):,} edits, {n // 10:,} recall lines; "
              f"indexed in {time.perf_counter() - started:.1f} s")  # fmt: skip
        for sessions in (False, True):
            out, took, waited = timed(m, "backup", with_sessions=sessions)
            with tarfile.open(out["path"], "r:gz") as tar:
                manifest = json.loads(tar.extractfile("manifest.json").read())
            raw = sum(f["size"] for f in manifest["files"])
            print(
                f"backup{' --with-sessions' if sessions else ''}: {took:.2f} s, "
                f"{out['size'] / 1e6:.1f} MB archive of {raw / 1e6:.1f} MB in "
                f"{out['files']} files; the snapshot held the writer "
                f"{out['writer_wait_ms']:.1f} ms; the longest wait of a concurrent write "
                f"{waited * 1000:.1f} ms"
            )
        plain = m.data("backup")["path"]
        empty = Memoryd(root / "empty")
        shutil.copy(plain, root / "empty" / "backups" / "b.tar.gz")
        out, took, waited = timed(empty, "restore", name="b.tar.gz")
        print(
            f"restore into an empty home: {took:.2f} s; laying held the writer "
            f"{out['writer_wait_ms']:.1f} ms; the longest wait of a concurrent write "
            f"{waited * 1000:.1f} ms"
        )
        empty.close()
        for ref, what in (
            ("memory.md:1", "an entry every journal line carries"),
            ("note:1", "a note"),
            ("session:long:4", "a session record"),
        ):
            steps.took = []
            out, took, waited = timed(m, "forget", id=ref)
            print(
                f"forget {what} ({ref}): {took:.2f} s ({out['places']}); the merge "
                f"{sum(steps.took):.2f} s in {len(steps.took)} steps, the longest "
                f"{max(steps.took, default=0) * 1000:.0f} ms; "
                f"a concurrent write waited up to {waited * 1000:.0f} ms"
            )
        m.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"(machine: {os.cpu_count()} cores, shared with other work; ratios within one run only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
