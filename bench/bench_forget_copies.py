"""Forget of a text many records hold: an owner who says the same request every day, or a note
written again and again. The time of `bxctl memory forget ID --yes` for one record (or note) whose
exact text N records (or N notes) hold, beyond the forget of a record said once in the same memoryd
(bxctl's start, the merge); it should grow linearly with N.

    .venv/bin/python bench/bench_forget_copies.py [--copies 1000,4000,40000] [--shape records]
"""

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import memoryd_proc

from memoryd.home import Home, ensure_dir
from memoryd.memory import notes

REQUEST = "remind me to water the plants on the balcony"
PER_LOG = 1000  # records of a session log; every other one is the request
BX = str(Path(sys.executable).parent / "bxctl")


def records_home(home: Home, copies: int) -> str:
    """Session logs in which every other record is the request; the id of one of them."""
    for s in range(max(1, copies * 2 // PER_LOG)):
        path = home.session_log(f"day-{s:05d}")
        ensure_dir(path.parent)
        with open(path, "w") as f:
            for n in range(min(PER_LOG, copies * 2 - s * PER_LOG)):
                said = n % 2 == 0
                text = REQUEST if said else f"done, reminder {s * PER_LOG + n} set"
                role = "user" if said else "assistant"
                line = {"type": role, "time": "2026-09-01T10:00:00Z", "content": text}
                f.write(json.dumps(line) + "\n")
    return "session:day-00000:0"


def notes_home(home: Home, copies: int) -> str:
    """notes.md holding the request as copies notes; the id of the first."""
    ensure_dir(home.memory)
    when = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    with open(home.memory_file("notes.md"), "w") as f:
        for _ in range(copies):
            f.write(notes.noted(REQUEST, when, "bench-s1", "private", False))
    return "note:1"


def said_once(home: Home) -> str:
    path = home.session_log("unique")
    ensure_dir(path.parent)
    line = {"type": "user", "time": "2026-09-01T10:00:00Z", "content": "said once"}
    path.write_text(json.dumps(line) + "\n")
    return "session:unique:0"


def bx(home: Home, timeout: float, *args: str) -> tuple[float, str]:
    env = dict(os.environ, BOXMAKER_HOME=str(home.root))
    t0 = time.perf_counter()
    p = subprocess.run([BX, *args], capture_output=True, text=True, env=env, timeout=timeout)
    return time.perf_counter() - t0, (p.stdout or p.stderr).strip()


def measure(tmp: Path, shape: str, copies: int, timeout: float) -> str:
    root = tmp / f"{shape}-{copies}"
    home = Home(root / "home")
    ref = (records_home if shape == "records" else notes_home)(home, copies)
    once = said_once(home)
    proc = memoryd_proc.start(root, home, log=root / "memoryd.log")
    try:
        bx(home, 600, "memory", "search", "balcony")  # waits for the start's catch-up
        base, _ = bx(home, 600, "memory", "forget", once, "--yes")
        try:
            took, said = bx(home, timeout, "memory", "forget", ref, "--yes")
        except subprocess.TimeoutExpired:
            return f"not done after {timeout:.0f} s"
        if not said.startswith("forgot"):
            raise SystemExit(f"forget of {ref} failed: {said[:300]}")
        return f"{max(0.0, took - base):.1f} s (the forget said once: {base:.1f} s)"
    finally:
        try:
            memoryd_proc.stop(proc)
        except subprocess.TimeoutExpired:  # a forget under way holds the writer past SIGTERM
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", default="1000,4000,40000")
    parser.add_argument("--shape", choices=("records", "notes"), default="records")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-forget-"))
    try:
        for copies in (int(c) for c in args.copies.split(",")):
            said = measure(tmp, args.shape, copies, args.timeout)
            print(f"{args.shape}: forget of a text {copies:,} hold: {said}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
