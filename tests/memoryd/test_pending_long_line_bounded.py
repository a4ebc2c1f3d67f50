"""pending.jsonl holding a run far longer than any line memoryd writes (NUL bytes a damaged disk
or a mistyped truncate left) is read a block of whole lines at a time, never whole: pending
lists what waits beside it and names the run as one damaged line, said once in memoryd's log
naming the file; accept still applies and journals; the rewrite that follows leaves the file as
it is rather than cut the run to what was read of it. The bound is made small here."""

import logging
import tracemalloc

import pytest

from memoryd.journal import linefile, wholelines
from tests.callargs import loose_call

from .store_helpers import CLEAN, args, journal_lines, memory_path, new_store, owner

BOUND = 64 << 10
RUN = 8 << 20  # a hundred and more times the bound


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(wholelines, "LONG_LINE", BOUND)
    monkeypatch.setattr(linefile, "CHUNK", BOUND // 4, raising=False)


def test_a_long_run_in_pending_is_one_damaged_line_read_in_bounded_memory(
    tmp_path, small_bound, caplog
):
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="a"), **CLEAN))
    store.call(*loose_call(args(action="add", file="memory", text="b"), **CLEAN))
    path = memory_path(store, "pending.jsonl")
    first, second = path.read_bytes().splitlines()
    path.write_bytes(first + b"\n" + b"\0" * RUN + b"\n" + second + b"\n")
    caplog.set_level(logging.WARNING, logger="memoryd.journal.linefile")
    tracemalloc.start()
    try:
        listed = owner(store, "pending")
        listed_again = owner(store, "pending")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < RUN // 4, f"pending held {peak:,} bytes reading a {RUN:,} byte run"
    assert listed == listed_again
    assert "p-2026-09-24-0001" in listed and "p-2026-09-24-0002" in listed
    assert listed.splitlines()[-1].startswith(f"(1 damaged line of {path} not listed, line 2:")
    said = [r.getMessage() for r in caplog.records if "longer than" in r.getMessage()]
    assert said == [
        f"{path}: line 2 is longer than {BOUND:,} bytes, more than any line memoryd writes (a "
        "run of NUL bytes a damaged disk or a truncate left?): damaged, read as its first bytes"
    ]
    before = path.read_bytes()
    owner(store, "accept", "p-2026-09-24-0001")
    assert journal_lines(store)[-1]["pending"] == "p-2026-09-24-0001"  # applied, journalled
    assert path.read_bytes() == before  # not rewritten: the run stays whole for the owner
    listed = owner(store, "pending")
    assert "p-2026-09-24-0001" not in listed and "p-2026-09-24-0002" in listed
