"""A scan over the whole of a journal month (the pending ids it resolves, its lines to a file,
newest first: the journal index's walk) holds a window of the month mapped at a time, not the
month: its answers are the same whatever the window, and memoryd's peak memory does not grow
with the month."""

import json
import random
import re
from contextlib import closing
from pathlib import Path

import pytest

from memoryd.journal import scan

PENDING = re.compile(rb'"pending": "(p-\d{4}-\d{2}-\d{2}-\d{4,})"')


def month(path: Path, lines: int, rng: random.Random, pad: int = 300) -> None:
    with open(path, "w") as f:
        for n in range(1, lines + 1):
            line = {"id": f"2026-11-01-{n:04d}", "to": rng.choice(["memory.md", "user.md"])}
            if rng.random() < 0.1:
                line["pending"] = f"p-2026-11-01-{rng.randrange(1, 10_000):04d}"
            line["after"] = ["x" * rng.randrange(pad)]
            f.write(json.dumps(line) + "\n")
        f.write('{"id": "2026-11-01-9999", "to": "memory.md", "pending": "p-2026-11-01-0001"')


def lines_to_whole(paths: list[Path], file: str) -> list[tuple[Path, int, str]]:
    """lines_to as it read a month: one search over all of it."""
    needle = b'"to": ' + json.dumps(file).encode()
    out = []
    for path in reversed(paths):
        data = path.read_bytes()
        position = len(data)
        while (position := data.rfind(needle, 0, position)) != -1:
            start = data.rfind(b"\n", 0, position) + 1
            end = data.find(b"\n", position)
            record = scan._parse(data[start : len(data) if end == -1 else end])
            if record is not None and record.to == file:
                out.append((path, start, record.id))
            position = start
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_the_answers_do_not_depend_on_the_window(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    paths = [tmp_path / "2026-10.jsonl", tmp_path / "2026-11.jsonl"]
    for path in paths:
        month(path, 300, rng)
    pending = {m.decode() for path in paths for m in PENDING.findall(path.read_bytes())}
    walks = {file: lines_to_whole(paths, file) for file in ("memory.md", "user.md", "soul.md")}
    assert walks["memory.md"] and walks["user.md"] and not walks["soul.md"]
    for window in (1, 7, 100, 4096, 5000, 1 << 30):
        monkeypatch.setattr(scan, "WINDOW", window)
        assert scan.pending_ids(paths) == pending, window
        for file, walk in walks.items():
            with closing(scan.lines_to(paths, file)) as found:
                assert [(p, start, r.id) for p, start, r in found] == walk, (window, file)


def _peak_mib() -> int:
    with open("/proc/self/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0]) // 1024


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def test_a_walk_over_a_long_month_holds_a_window_of_it(tmp_path):
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("needs Linux's /proc/self/clear_refs")
    path = tmp_path / "2026-11.jsonl"
    month(path, 12_000, random.Random(3), pad=6_000)  # about 36 MiB
    assert path.stat().st_size > 32 << 20
    grown = {}
    for what, walk in (
        ("pending", lambda: scan.pending_ids([path])),
        ("none to soul.md", lambda: scan.last_with_to([path], "soul.md")),
        ("all to user.md", lambda: sum(1 for _ in scan.lines_to([path], "user.md"))),
    ):
        _reset_peak()
        before = _peak_mib()
        walk()
        grown[what] = _peak_mib() - before
    assert all(mib < 16 for mib in grown.values()), grown
