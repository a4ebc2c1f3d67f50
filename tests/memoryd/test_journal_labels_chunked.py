"""The sessions' labels memoryd reads from its journal are read a bounded chunk at a time: the
answers are those of reading each month whole (whatever the chunk size, with lines that raise a
label torn across chunks, lines longer than a chunk, damaged lines, a torn last line, a line split
by a carriage return, and a month that grows between looks), and a long month costs memoryd no
more than a few chunks of memory."""

import json
import random
import re
import tracemalloc

import pytest

from memoryd.home import Home
from memoryd.index import journallabels
from memoryd.index.journallabels import CLEAN, Label

MONTH = "2026-12.jsonl"
# The search as it ran on each line of a month read whole.
WHOLE_LINE = re.compile(rb'"untrusted"\s*:\s*true|"secret"')


def reference(data: bytes) -> dict[str, Label]:
    """The labels of data's whole lines, read as one piece and split into lines."""
    labels: dict[str, Label] = {}
    end = data.rfind(b"\n") + 1
    for line in data[:end].splitlines():
        if WHOLE_LINE.search(line):
            journallabels._take(labels, line)
    return labels


def edit(rng: random.Random, n: int) -> bytes:
    session = f"s{rng.randrange(40)}"
    record = {
        "id": f"2026-12-01-{n:04d}",
        "session": session,
        "call": f"call-{n}" if rng.random() < 0.9 else "",
        "taint": rng.choice(["private", "private", "public", "secret", "bogus"]),
        "untrusted": rng.random() < 0.2,
        "before": ["x" * rng.randrange(0, 300)],
    }
    line = json.dumps(record).encode()
    pick = rng.random()
    if pick < 0.05:
        line = line.replace(b'"untrusted": true', b'"untrusted"  :\ttrue')
    elif pick < 0.08:
        line = line[: len(line) // 2]  # damaged
    elif pick < 0.10:
        line = line.replace(b', "taint"', b',\r"taint"')  # a line the reader splits in two
    elif pick < 0.12:
        line = line.replace(b', "untrusted": true', b',\r"untrusted": true')
    elif pick < 0.13:
        line = line.replace(b'"untrusted": true', b'"untrusted"\r\n: true')
    return line + b"\n"


def journal(seed: int, lines: int = 400) -> bytes:
    rng = random.Random(seed)
    data = b"".join(edit(rng, n) for n in range(lines))
    long = {"session": "long1", "call": "c", "taint": "secret", "pad": "y" * 5000}
    return data + json.dumps(long).encode() + b"\n" + b'{"session": "s1", "call": "c", "untr'


def labels_of(tmp_path, name: str, parts: list[bytes]) -> list[dict[str, Label]]:
    """The labels read after each part is appended to a fresh home's month file."""
    home = Home(tmp_path / name)
    home.edits.mkdir(parents=True)
    seen = []
    for part in parts:
        with open(home.edits / MONTH, "ab") as f:
            f.write(part)
        journallabels.label(home, "s0")
        seen.append(dict(journallabels._homes[str(home.root)].labels))
    return seen


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_labels_are_those_of_the_month_read_whole(tmp_path, monkeypatch, seed):
    data = journal(seed)
    cuts = sorted(random.Random(seed).sample(range(1, len(data)), 5))
    parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    want = [reference(data[:cut]) for cut in [*cuts, len(data)]]
    assert any(label != CLEAN for label in want[-1].values())
    assert want[-1].get("long1") == ("secret", False)
    for chunk in (1, 7, 64, 1000, 1 << 20):
        monkeypatch.setattr(journallabels, "CHUNK", chunk)
        assert labels_of(tmp_path, f"home-{chunk}", parts) == want, chunk


def test_a_month_rewritten_is_read_again_the_same_way(tmp_path, monkeypatch):
    monkeypatch.setattr(journallabels, "CHUNK", 13)
    home = Home(tmp_path / "home")
    home.edits.mkdir(parents=True)
    first, second = journal(4, 50), journal(5, 50)
    (home.edits / MONTH).write_bytes(first)
    journallabels.label(home, "s0")
    (home.edits / "new").write_bytes(second)
    (home.edits / "new").replace(home.edits / MONTH)
    journallabels.label(home, "s0")
    want = reference(first)
    for session, label in reference(second).items():
        want[session] = journallabels.stricter(want.get(session, CLEAN), label)
    assert journallabels._homes[str(home.root)].labels == want


def test_a_long_month_is_read_in_little_memory(tmp_path):
    """A month of 24 MiB, most of it lines that raise no label, is read holding a few chunks."""
    home = Home(tmp_path / "home")
    home.edits.mkdir(parents=True)
    clean = json.dumps({"session": "c1", "call": "c", "taint": "private", "pad": "z" * 900})
    raised = json.dumps({"session": "t1", "call": "c", "taint": "secret", "untrusted": True})
    with open(home.edits / MONTH, "wb") as f:
        for n in range(24 * 1024):
            f.write(((raised if n % 97 == 0 else clean) + "\n").encode())
    tracemalloc.start()
    try:
        assert journallabels.label(home, "t1") == ("secret", True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * journallabels.CHUNK, peak
