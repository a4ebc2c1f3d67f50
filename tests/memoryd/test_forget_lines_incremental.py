"""The journal's forget lines are read only as far as each month grew: after a write memoryd reads
what the write appended, not the month again, and a start reads from the saved reading on, not
every month whole. The answers stay those of reading every month whole (forgetlines.parse),
whatever happened to the months: appends, a line torn and then completed, a month replaced,
shrunk, rewritten in place before where it was read to, removed; whatever the chunk size; and
whatever became of the saved reading (damaged, of another journal, missing). A long month costs
memoryd a few chunks of memory, not the month."""

import json
import os
import random
import time
import tracemalloc
from pathlib import Path

import pytest

from memoryd import server
from memoryd.config import load
from memoryd.home import Home
from memoryd.journal import forgetlines, forgetread, forgetsaved
from memoryd.journal.forgetlines import NONE, Forgets

DIGEST_A = "a" * 64


def whole(home: Home) -> Forgets:
    """What the journal's forget lines name, every month read whole (as memoryd read them
    before it kept how far it had read)."""
    keys: set = set()
    texts: set = set()
    keyless: list = []
    last, last_texts = NONE.last, NONE.last_texts
    for path in sorted(home.edits.glob("*.jsonl")):
        month = forgetlines.parse(path.read_bytes())
        keys |= month.keys
        texts |= month.texts
        keyless += month.keyless
        if month is not NONE:
            last, last_texts = month.last, month.last_texts
    return forgetlines.made(keys, keyless, last, texts, last_texts)


def line(rng: random.Random, n: int) -> bytes:
    """A journal line: mostly edits (some quoting "forgot"), forget lines of each kind, damaged
    ones."""
    ident = f"2026-12-01-{n:04d}"
    pick = rng.random()
    if pick < 0.55:
        text = "x" * rng.randrange(0, 400) + (' said "forgot" once' if rng.random() < 0.2 else "")
        record = {"id": ident, "action": "add", "to": "memory.md", "before": [], "after": [text]}
    elif pick < 0.75:
        forgot = {
            "id": "note:3",
            "at": f"2026-12-01T00:{n % 60:02d}Z",
            "keys": [f"session:s{rng.randrange(9)}:{n}" for _ in range(rng.randrange(0, 3))],
            "digests": [f"{rng.randrange(16**64):064x}" for _ in range(rng.randrange(0, 2))],
        }
        record = {"id": ident, "action": "forget", "forgot": forgot}
    elif pick < 0.82:  # an older memoryd's: only the id the owner gave
        named = rng.choice([f"note:{n}", "memory.md:2"])
        record = {"id": ident, "action": "forget", "forgot": {"id": named}}
    elif pick < 0.88:  # a restore's, carrying digests over
        carried = [{"digest": DIGEST_A, "time": "2026-11-30T10:00Z", "edit": "2026-11-30-0001"}]
        forgot = {"id": "x", "at": "2026-12-01T01:00Z", "keys": [], "carried": carried}
        record = {"id": "?bad", "action": "forget", "forgot": forgot}
    else:
        record = {"id": ident, "action": "forget", "forgot": {"keys": [f"note:{n}"]}}
        raw = json.dumps(record).encode()
        return raw[: rng.randrange(1, len(raw))] + b"\n"  # damaged
    return json.dumps(record).encode() + b"\n"


def lines(rng: random.Random, start: int, count: int) -> bytes:
    return b"".join(line(rng, n) for n in range(start, start + count))


@pytest.fixture
def home(tmp_path) -> Home:
    h = Home(tmp_path / "home")
    h.edits.mkdir(parents=True, mode=0o700)
    h.index_dir.mkdir(mode=0o700)
    forgetread._journals.clear()
    return h


def fresh(home: Home) -> Forgets:
    """The answer of a memoryd started now: the saved reading on."""
    forgetread._journals.clear()
    return forgetread.keep_saved(home)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(".x.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class Scanned:
    """The bytes forgetread parsed, where each read started."""

    def __init__(self, monkeypatch):
        self.starts: list[int] = []
        self.bytes = 0
        real = forgetread._scan

        def scan(f, start, size, found):
            self.starts.append(start)
            self.bytes += size - start
            return real(f, start, size, found)

        monkeypatch.setattr(forgetread, "_scan", scan)


@pytest.mark.parametrize("chunk", [7, 300, 1 << 20])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_answers_are_those_of_whole_months_through_every_change(home, monkeypatch, chunk, seed):
    monkeypatch.setattr(forgetread, "CHUNK", chunk)
    rng = random.Random(seed)
    old, now = home.edits / "2026-11.jsonl", home.edits / "2026-12.jsonl"
    n = 0

    def more(count: int) -> bytes:
        nonlocal n
        n += count
        return lines(rng, n - count, count)

    def check(saved_too: bool = True) -> None:
        expected = whole(home)
        assert forgetread.forgets(home) == expected
        if saved_too:  # a start, from the reading saved last
            assert fresh(home) == expected
            assert forgetread.forgets(home) == expected

    forgetread.keep_saved(home)
    check()
    old.write_bytes(more(60))
    check()
    for _ in range(4):  # appends, some while the saved reading is behind
        append(now, more(rng.randrange(1, 25)))
        check(saved_too=rng.random() < 0.5)
    torn = line(rng, 9000).rstrip(b"\n")
    append(now, torn[: len(torn) // 2])  # a line being written (or torn by a crash)
    check()
    append(now, torn[len(torn) // 2 :])  # a whole line, its newline not written yet
    check()
    append(now, b"\n" + more(5))
    check()
    replace(old, more(30))  # a month replaced (a forget's scrub, a restore)
    check()
    with open(now, "r+b") as f:  # a month shrunk (cut back by hand), then appended to
        f.truncate(now.stat().st_size // 2)
    check()
    append(now, b"\n" + more(10))
    check()
    data = bytearray(now.read_bytes())  # rewritten in place before where it was read to
    at = data.rfind(b'"forgot"')
    data[at : at + 8] = b'"forgoT"'
    with open(now, "r+b") as f:
        f.write(bytes(data))
    check()
    forgetsaved_path = home.index_dir / forgetsaved.NAME
    forgetsaved_path.write_text("{not json")  # a damaged saved reading
    check()
    forgetsaved_path.unlink()  # none
    check()
    old.unlink()  # a month removed
    check()


def test_a_write_reads_what_it_appended_and_a_start_what_was_appended_since(home, monkeypatch):
    rng = random.Random(7)
    month = home.edits / "2026-12.jsonl"
    month.write_bytes(lines(rng, 0, 3000))  # about a megabyte
    size = month.stat().st_size
    forgetread.forgets(home)  # read before the start's call (a restore finished at start)
    assert not (home.index_dir / forgetsaved.NAME).exists()
    forgetread.keep_saved(home)  # a first start reads it all, and saves what it read
    assert (home.index_dir / forgetsaved.NAME).exists()
    scanned = Scanned(monkeypatch)
    forgetread.forgets(home)
    assert scanned.starts == []  # unchanged: a stat

    added = lines(rng, 3000, 3)
    append(month, added)
    assert forgetread.forgets(home) == whole(home)
    assert scanned.starts == [size] and scanned.bytes == len(added)

    scanned.starts, scanned.bytes = [], 0
    more = lines(rng, 3003, 4)
    append(month, more)
    assert fresh(home) == whole(home)  # the saved reading ends where the first start read to
    assert scanned.starts == [size] and scanned.bytes == len(added) + len(more)

    scanned.starts, scanned.bytes = [], 0
    assert fresh(home) == whole(home)  # saved by that start: nothing left to read
    assert scanned.bytes == 0

    replace(month, month.read_bytes())  # another file, the same bytes: read from its start
    scanned.starts = []
    assert fresh(home) == whole(home)
    assert scanned.starts == [0]


def test_a_saved_reading_that_does_not_fit_is_not_used(home, monkeypatch, caplog):
    rng = random.Random(8)
    month = home.edits / "2026-12.jsonl"
    month.write_bytes(lines(rng, 0, 200))
    forgetread.keep_saved(home)
    saved = home.index_dir / forgetsaved.NAME
    value = json.loads(saved.read_text())
    value["months"][0]["keys"].append("session:x:1 OR 1=1")  # not a key
    saved.write_text(json.dumps(value))
    scanned = Scanned(monkeypatch)
    assert fresh(home) == whole(home)
    assert scanned.starts == [0]
    assert "journal-forgets.json: not usable" in caplog.text
    assert "session:x:1 OR 1=1" not in json.dumps(json.loads(saved.read_text()))
    assert oct(saved.stat().st_mode & 0o777) == "0o600"


def test_a_long_month_costs_a_few_chunks_of_memory(home):
    rng = random.Random(9)
    month = home.edits / "2026-12.jsonl"
    block = lines(rng, 0, 2000)
    with open(month, "wb") as f:
        for _ in range(30):
            f.write(block)
    assert month.stat().st_size > 12 * 2**20
    tracemalloc.start()
    try:
        found = forgetread.forgets(home)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == whole(home)
    assert peak < 4 * forgetread.CHUNK, f"peak {peak / 2**20:.1f} MiB"


def test_a_start_reads_only_what_the_journal_gained_since_the_last(tmp_path, monkeypatch):
    from tests.memoryd_process import MemorydProcess

    p = MemorydProcess(tmp_path)
    p.home.joinpath("memory", "edits").mkdir(parents=True, mode=0o700)
    month = Home(p.home).edits / f"{time.strftime('%Y-%m', time.gmtime())}.jsonl"
    rng = random.Random(10)
    month.write_bytes(lines(rng, 0, 3000))
    written = month.stat().st_size
    p.start(timeout=60)  # reads it all, and saves what it read
    p.stop()
    saved = json.loads((Home(p.home).index_dir / forgetsaved.NAME).read_text())
    (offset,) = [m["offset"] for m in saved["months"] if m["name"] == month.name]
    assert offset >= written
    append(month, lines(rng, 3000, 5))
    forgetread._journals.clear()
    scanned = Scanned(monkeypatch)
    monkeypatch.setenv("BOXMAKER_HOME", str(p.home))
    service = server.prepare(load(p.config))
    try:
        assert scanned.starts == [offset]
        assert scanned.bytes == month.stat().st_size - offset < 4096
        assert forgetread.forgets(Home(p.home)) == whole(Home(p.home))
    finally:
        service.close()
        service.index.close()
        forgetread._journals.clear()
