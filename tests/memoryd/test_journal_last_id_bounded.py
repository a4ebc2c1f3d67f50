"""The last id of a journal month whose tail holds none (a run far longer than any line memoryd
writes ends it: NUL bytes a damaged disk or a mistyped truncate left) is found by reading the month
a block of whole lines at a time, never whole, so that the next write's id goes on after it and
memoryd's memory stays bounded. The bound is made small here."""

import tracemalloc

import pytest

from memoryd.journal import linefile, wholelines
from memoryd.journal.journal import last_id

BOUND = 64 << 10
RUN = 8 << 20


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(wholelines, "LONG_LINE", BOUND)
    monkeypatch.setattr(linefile, "CHUNK", BOUND // 4, raising=False)


def test_a_month_whose_tail_holds_no_id_is_searched_in_bounded_memory(tmp_path, small_bound):
    """The last id of a month whose last 64 KiB hold none (a long run ends it): found by
    reading the month a block at a time, not whole, so the next id goes on after it."""
    month = tmp_path / "2026-09.jsonl"
    month.write_bytes(
        b'{"id": "2026-09-24-0001", "to": "memory.md"}\n'
        b'{"id": "2026-09-24-0002", "to": "memory.md"}\n' + b"\0" * RUN
    )
    tracemalloc.start()
    try:
        found = last_id(month)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == "2026-09-24-0002"
    assert peak < RUN // 4, f"the last id took {peak:,} bytes over a {RUN:,} byte run"
