"""What a recall mode switch costs the writer: its tables built in one go, or a part at a time.

After `[recall] mode` changes, memoryd builds the new mode's tables from the spec's rows once it
listens, a part at a time (modes.prepare_part: FILL_BATCH rows or FILL_TEXT characters of text a
part, the old mode's tables set aside first and emptied DROP_BYTES a part), each part a writer
job of its own, so that a memory write waits for one part, not for the build. This builds the
same index both ways for each switch asked (MODE or WAS:MODE, the index first built in WAS in one
go; hybrid's vectors filled with random bytes, as after the embedder's work) and prints the total
of each, the number of parts, and the longest part: what a write sent during the build may wait.
A switch back to spec (WAS:spec) builds nothing: its parts set the old tables aside and empty them
(modes.drop_part), and in one go they are dropped.

    .venv/bin/python bench/bench_mode_build.py context hybrid:context context:hybrid  # 150,000
    .venv/bin/python bench/bench_mode_build.py hybrid:spec context:spec               # 150,000
    .venv/bin/python bench/bench_mode_build.py --records 5200 --chars 24000 context   # long rows
"""

import argparse
import json
import random
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from bench_recall_modes import write_home
from recall_eval.shapes import conversation

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index


def conversations_home(home: Home, records: int) -> int:
    """Conversations of LoCoMo's shape, generated, until about records turns."""
    found, n, seed = [], 0, 1000
    while n < records:
        made = conversation("locomo", seed)
        seed += 1
        found.append(made)
        n += sum(len(s.turns) for s in made.sessions)
    write_home(home, found)
    return n


def long_rows_home(home: Home, records: int, chars: int) -> int:
    """records turns of about chars characters each (a tool's long output, say)."""
    rng = random.Random(chars)
    words = [f"w{n}q{rng.randrange(10**6)}" for n in range(20_000)]
    for number in range(records):
        text, size = [], 0
        while size < chars:
            word = rng.choice(words)
            text.append(word)
            size += len(word) + 1
        path = home.session_log(f"long-{number % 4}")
        ensure_dir(path.parent)
        with open(path, "a", encoding="utf-8") as log:
            log.write(
                json.dumps(
                    {"type": "user", "time": "2026-05-01T10:00:00Z", "content": " ".join(text)}
                )
                + "\n"
            )
    return records


def fresh(home: Home, saved: Path) -> None:
    for name in ("memory.sqlite3-wal", "memory.sqlite3-shm"):
        (home.index_dir / name).unlink(missing_ok=True)
    shutil.copyfile(saved, home.index_db)


def saved_in(home: Home, was: str, spec: Path, folder: Path) -> Path:
    """The index in mode was (built in one go from spec's), kept beside the home."""
    fresh(home, spec)
    before = Index(home, mode=was)
    before.open()
    before.close()
    if was == "hybrid":  # every row with its vector, as after the embedder's work
        conn = sqlite3.connect(home.index_db)
        conn.execute("INSERT OR REPLACE INTO vectors SELECT rowid, randomblob(384) FROM sources")
        conn.execute("DELETE FROM vector_pending")
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    kept = folder / f"{was}.sqlite3"
    shutil.copyfile(home.index_db, kept)
    return kept


def in_one_go(home: Home, saved: Path, mode: str) -> float:
    fresh(home, saved)
    index = Index(home, mode=mode)
    index.open(defer_mode=True)
    began = time.monotonic()
    index.prepare_mode()
    took = time.monotonic() - began
    index.close()
    return took


def in_parts(home: Home, saved: Path, mode: str) -> list[float]:
    fresh(home, saved)
    index = Index(home, mode=mode)
    index.open(defer_mode=True)
    parts = []
    try:
        while True:
            began = time.monotonic()
            done = index.prepare_mode_part()
            parts.append(time.monotonic() - began)
            if done:
                return parts
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=150_000)
    parser.add_argument("--chars", type=int, default=0, help="long rows of this size instead")
    parser.add_argument("switches", nargs="*", default=["context"])
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-mode-build-"))
    try:
        home = Home(folder / "home")
        if args.chars:
            n = long_rows_home(home, args.records, args.chars)
        else:
            n = conversations_home(home, args.records)
        spec = Index(home)
        spec.open()
        spec.catch_up_all()
        spec.close()
        spec_file = folder / "spec.sqlite3"
        shutil.copyfile(home.index_db, spec_file)
        print(f"{n:,} records" + (f" of about {args.chars:,} characters" if args.chars else ""))
        for asked in args.switches:
            was, _, mode = asked.rpartition(":")
            saved = saved_in(home, was, spec_file, folder) if was else spec_file
            whole = in_one_go(home, saved, mode)
            parts = in_parts(home, saved, mode)
            print(
                f"{was or 'spec'} -> {mode}: in one go {whole:.1f} s; in {len(parts)} parts"
                f" {sum(parts):.1f} s, the longest {max(parts):.2f} s, the first"
                f" {parts[0]:.2f} s",
                flush=True,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
