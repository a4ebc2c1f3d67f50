"""Peak memory of stats, a restore and a forget on a home with a big notes.md (which has no limit).

It writes a home whose notes.md is about --mb MB (notes of about 350 bytes, as an import's; one
in 50 moved, one holding memory.md's entry, one the text forgotten), runs memoryd in this process
(store, index, service, the writer thread, as bench_owner_data.py does) and prints, for each
command, its time and the process's peak RSS while it ran (VmHWM, reset before it):

- stats (--json);
- restore of the home's backup into an empty home (its notes.md's headers checked against its
  journal, laid, indexed again);
- forget of a note by its text, then of note:3 (notes.md marked, the backup in backups/ read to
  say whether it may still hold the text).

    .venv/bin/python bench/bench_notes_md.py [--mb 43]
"""

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memoryd.home import Home  # noqa: E402
from tests.memoryd.owner_data_harness import Memoryd  # noqa: E402

ENTRY = "The owner's router is in the hall cupboard."
GONE = "apricots are kept in the blue tin"


def write_home(root: Path, mb: int) -> None:
    home = Home(root)
    home.memory.mkdir(parents=True, exist_ok=True)
    home.memory_file("memory.md").write_text(ENTRY + "\n")
    noted = "§ noted 2026-10-01T10:00Z in session s-{} · private\n"
    moved = "§ moved 2026-10-01T10:00Z from memory.md in session s-{}\n"
    words = "the tea the garden the weather and the launch on Thursday at the NAS "
    with open(home.memory_file("notes.md"), "w") as f:
        n = 0
        while f.tell() < mb * 1_000_000:
            head = (moved if n % 50 == 0 else noted).format(n % 997)
            text = ENTRY if n == 1_000 else GONE if n == 2_000 else f"{n} {words * 4}"
            f.write(head + text + "\n")
            n += 1


def peak_mib() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


def measured(what: str, run) -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM from here
    started = time.perf_counter()
    run()
    took = time.perf_counter() - started
    print(f"{what}: {took:.1f} s, peak RSS {peak_mib()} MiB", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=43)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-notes-md-"))
    try:
        write_home(root / "home", args.mb)
        size = Home(root / "home").memory_file("notes.md").stat().st_size
        m = Memoryd(root / "home")
        print(f"notes.md: {size / 1e6:.1f} MB; memoryd in process: {peak_mib()} MiB at its start")
        plain = m.data("backup")["path"]
        empty = Memoryd(root / "empty")
        shutil.copy(plain, root / "empty" / "backups" / "b.tar.gz")
        measured("stats", lambda: m.admin("stats", {"json": True}))
        measured("restore into an empty home", lambda: empty.data("restore", name="b.tar.gz"))
        empty.close()
        measured("forget a note by its text", lambda: m.data("forget", id=GONE))
        measured("forget note:3", lambda: m.data("forget", id="note:3"))
        m.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
