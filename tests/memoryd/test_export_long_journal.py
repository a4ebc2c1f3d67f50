"""bxctl memory export over a long journal: the journal is never trimmed, so it is the one file that
grows with the home's age, and the export reads it a chunk at a time, keeping the provenance of
the entries and notes there are, never every line (held whole, a 336 MiB month took memoryd past
its 1 GiB limit). An owner command that runs out of memory is answered in one line."""

import datetime as dt
import json
import tracemalloc

import pytest

from memoryd.data import exchange, exportitems, snapshot
from memoryd.errors import AdminRefused
from memoryd.journal.journal import Journal
from tests.memoryd.owner_data_harness import Memoryd

ENTRIES = 20
EDITS = 4_000


def _long_journal(m: Memoryd) -> tuple[list[str], int]:
    """EDITS replaces of memory.md's entries, each line holding every entry before and after
    (a month of about 14 MiB); memory.md as the last one left it. (its entries, the month's size)"""
    month = f"{dt.datetime.now(dt.UTC):%Y-%m}"

    def entry(n: int) -> str:
        return f"{n}: the router in the hall is reset on Thursdays after the NAS backup at UTC."

    current = [entry(i) for i in range(ENTRIES)]
    path = m.home.edits / f"{month}.jsonl"
    with open(path, "a") as f:
        for n in range(1, EDITS + 1):
            before = list(current)
            current[n % ENTRIES] = entry(ENTRIES + n)
            line = {
                "id": f"{month}-01-{n:06d}",
                "time": f"{month}-01T00:00:00Z",
                "session": "mm-s0001",
                "call": f"c{n}",
                "taint": "private",
                "untrusted": False,
                "action": "replace",
                "file": "memory.md",
                "to": "memory.md",
                "before": before,
                "after": list(current),
                "notes": [],
            }
            f.write(json.dumps(line) + "\n")
    m.home.memory_file("memory.md").write_text("\n§\n".join(current) + "\n")
    return current, path.stat().st_size


def test_an_export_keeps_no_more_than_a_chunk_of_a_long_journal(tmp_path):
    m = Memoryd(tmp_path / "home")
    try:
        current, size = _long_journal(m)
        snap = exchange.hold(m.home, Journal(m.home))
        try:
            tracemalloc.start()
            found = list(exchange.items(snap))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            snap.close()
    finally:
        m.close()
    assert size > 8 * 1024 * 1024
    assert peak < size / 3, f"peak {peak:,} bytes for a {size:,}-byte journal"
    entries = [item for item in found if item["file"] == "memory.md"]
    assert [item["text"] for item in entries] == current
    # Each entry's provenance is still the last edit that added it.
    month = f"{dt.datetime.now(dt.UTC):%Y-%m}"
    last = {ENTRIES + n: n for n in range(1, EDITS + 1)}
    for item in entries:
        number = int(item["text"].split(":")[0])
        edit = f"{month}-01-{last[number]:06d}" if number >= ENTRIES else None
        assert item["provenance"]["edit"] == edit


def test_lines_torn_by_the_chunks_are_read_whole():
    long = b"x" * (5 << 19)  # 2.5 MiB: a line that spans three chunks
    lines = [b'{"a": 1}', long, b"", b"tail without its newline"]
    data = b"\n".join(lines)
    held = snapshot.Held("memory/edits/2026-12.jsonl", None, len(data), data=data)
    assert list(exportitems._lines(held)) == lines


def test_an_owner_command_out_of_memory_is_answered_in_one_line(tmp_path, monkeypatch, caplog):
    m = Memoryd(tmp_path / "home")
    try:

        def exhausted(*_args, **_kwargs):
            raise MemoryError

        monkeypatch.setattr(exchange, "items", exhausted)
        with pytest.raises(AdminRefused) as refused:
            m.admin("export", {})
        assert str(refused.value).startswith("memory export stopped: memoryd ran out of memory")
        assert "\n" not in str(refused.value)
        assert not [r for r in caplog.records if r.exc_info]  # no traceback logged
        m.call({"action": "add", "file": "memory", "text": "Still writing."})  # memoryd goes on
    finally:
        m.close()
