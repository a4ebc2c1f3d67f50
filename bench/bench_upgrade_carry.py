"""What an upgrade that rebuilds a hybrid index costs: the vectors kept, and the time they save.

    PYTHONPATH=bench .venv/bin/python bench/bench_upgrade_carry.py [--size 100000] [--keep DIR]

A home of generated conversations (as bench_hybrid_scale.py builds it, its vectors synthetic and
stored as memoryd stores them) is indexed in mode hybrid. Then, twice, in a fresh process each, the
index is made to look built by an older memoryd (its format stamp lowered) and opened as memoryd
opens it, the catch-up run to its end and the kept vectors let go (index/carryfile.py):

- kept: the old file set aside and its vectors given to the rows the catch-up adds;
- dropped: the old file removed first, as before the vectors were kept (every row pending).

For each: seconds to open, to catch up, to end; the rows with a vector and the rows left to the
embedder; and, at the real model's rate on this machine (bench_embed.py; RATE rows/s unless
--rate says), how long the embedder would then take.
"""

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_hybrid_scale import _child, fit_model
from bench_recall_modes import write_home
from recall_eval.conversations import conversation

from memoryd.home import Home
from memoryd.index import carryfile
from memoryd.index.dbfile import remove_database
from memoryd.index.index import Index

RATE = 230.0  # rows embedded a second on 2 cores (bench_embed.py, long turns, 2026-12-02)


def _lower_stamp(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("UPDATE settings SET value = '2' WHERE name = 'format'")
        conn.commit()
    finally:
        conn.close()


def upgrade(home_root: str, keep: str) -> None:
    """In this process: the index opened after an upgrade, caught up, the kept vectors let go."""
    home = Home(Path(home_root))
    if keep == "dropped":
        remove_database(home.index_db)
    started = time.perf_counter()
    index = Index(home, mode="hybrid")
    index.open()
    index.live.stop_embedder()  # what it would compute is counted, not computed
    opened = time.perf_counter()
    rows = index.catch_up_all()
    caught = time.perf_counter()
    index.end_carry()
    ended = time.perf_counter()
    conn = index._write()
    (vectors,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
    (pending,) = conn.execute("SELECT count(*) FROM vector_pending").fetchone()
    index.close()
    print(
        json.dumps(
            {
                "rows": rows,
                "open_s": round(opened - started, 2),
                "catch_up_s": round(caught - opened, 2),
                "end_s": round(ended - caught, 2),
                "with_vector": vectors,
                "left_to_embed": pending,
            }
        ),
        flush=True,
    )


def _copy_index(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "--sparse=always", str(src), str(dst)], check=True)


def run(folder: Path, size: int, rate: float) -> None:
    home = Home(folder / "home")
    built = folder / f"built-{size}"
    if not built.exists():
        convs, turns, seed = [], 0, 1000
        while turns < size:
            convs.append(conversation(seed))
            turns += sum(len(s.turns) for s in convs[-1].sessions)
            seed += 1
        write_home(home, convs)
        model = folder / "model.npz"
        fit_model(convs, model)
        print(f"size {size}: {turns} turns in {len(convs)} conversations", flush=True)
        print("  build: " + json.dumps(_child("build", str(home.root), str(model))), flush=True)
        built.touch()
    saved = folder / "index-before-upgrade.sqlite3"
    conn = sqlite3.connect(home.index_db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    _copy_index(home.index_db, saved)
    try:
        for keep in ("kept", "dropped"):
            _lower_stamp(home.index_db)
            done = subprocess.run(
                [sys.executable, __file__, "upgrade", str(home.root), keep],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                sys.exit(done.stderr[-3000:])
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            figures["embedder_s_at_rate"] = round(figures["left_to_embed"] / rate)
            print(f"  {keep}: " + json.dumps(figures), flush=True)
            remove_database(home.index_db)
            carryfile.detach_and_remove(None, home.index_db)
            _copy_index(saved, home.index_db)
    finally:
        saved.unlink(missing_ok=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "upgrade":
        upgrade(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=RATE, help="rows embedded a second")
    parser.add_argument("--keep", help="a folder for the home, kept and used again")
    args = parser.parse_args()
    if args.keep:
        run(Path(args.keep), args.size, args.rate)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), args.size, args.rate)


if __name__ == "__main__":
    main()
