"""A journal month cut short (an owner's editor saving it in place) while memoryd searches it:
the search reads it as shorter from there on, never kills memoryd. A mapped month did: every
page past the file's new end was gone from the mapping, and touching one raised SIGBUS."""

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.journal import mapfile

# In a process of its own, as SIGBUS would end it: the month is searched by each reader's way
# of searching it (find, rfind, slices, a window at a time) after it was cut short.
CHILD = """
import os, re, sys
from pathlib import Path
from memoryd.journal import forgotpending, mapfile, scan, twice
path = Path(sys.argv[1])
with mapfile.mapped(path) as data:
    size = len(data)
    os.truncate(path, 0)
    assert data.find(b'{"id": "2026-12-05-0001"', 0) in (-1, 0)
    assert data.rfind(b"\\n", 0, size) == -1
    assert data[size // 2 : size // 2 + 100] == b""
    assert mapfile.line_starting(data, b'{"id": "2026-12-05-0999"') == -1
    assert scan._rfind(data, b'"to": "memory.md"', size) == -1
    assert list(twice._windows(data)) == [] and forgotpending.ids_in(data) == {}
    assert list(mapfile.finditer(re.compile(rb'"id": "([^"]*)"'), data)) == []
print(len(data))
"""


def test_a_month_cut_short_while_searched_reads_as_shorter(tmp_path: Path) -> None:
    month = tmp_path / "2026-12.jsonl"
    with open(month, "w") as f:
        for n in range(1, 40_000):
            f.write(json.dumps({"id": f"2026-12-05-{n:04d}", "to": "memory.md"}) + "\n")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(month)], capture_output=True, timeout=60
    )
    assert done.returncode == 0, (done.returncode, done.stderr.decode()[-800:])
    assert done.stdout.strip() == b"0"  # its length says where the file ends now


@pytest.mark.parametrize("window", [1, 3, 7, 64, 1 << 20])
def test_the_view_answers_as_the_bytes_do(tmp_path: Path, monkeypatch, window: int) -> None:
    monkeypatch.setattr(mapfile, "WINDOW", window)
    monkeypatch.setattr(mapfile, "FIRST", max(1, window // 4))
    rng = random.Random(window)
    raw = bytes(rng.choice(b"ab\n") for _ in range(3_000))
    path = tmp_path / "month"
    path.write_bytes(raw)
    with mapfile.mapped(path) as data:
        assert len(data) == len(raw)
        for _ in range(400):
            sub = bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(1, 5)))
            a, b = rng.randrange(-50, 3_050), rng.randrange(-50, 3_050)
            assert data.find(sub, a, b) == raw.find(sub, a, b), (sub, a, b)
            assert data.rfind(sub, a, b) == raw.rfind(sub, a, b), (sub, a, b)
            assert data.find(sub, a) == raw.find(sub, a)
            assert data.rfind(sub) == raw.rfind(sub)
            assert data[a:b] == raw[a:b]
            if -len(raw) <= a < len(raw):
                assert data[a] == raw[a]


def test_finditer_finds_what_a_whole_search_finds(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(mapfile, "WINDOW", 100)
    monkeypatch.setattr(mapfile, "LONG_LINE", 1_000)
    pattern = re.compile(rb'^\{"id": "([0-9-]+)".*$', re.M)
    lines = [json.dumps({"id": f"2026-12-05-{n:04d}", "x": "y" * (n % 50)}) for n in range(300)]
    lines[100] = '{"id": "2026-12-05-long", "x": "' + "z" * 5_000 + '"}'  # past LONG_LINE
    raw = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "month"
    path.write_bytes(raw)
    with mapfile.mapped(path) as data:
        found = [m.group(1) for m in mapfile.finditer(pattern, data)]
        whole = [m.group(1) for m in mapfile.finditer(pattern, raw)]
    assert found == whole == [m.group(1) for m in pattern.finditer(raw)]
