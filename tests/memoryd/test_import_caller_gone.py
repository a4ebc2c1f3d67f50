"""An import whose bxctl has gone (Ctrl-C: its connection closed) stops instead of running on for
nobody: a dry run at the next item, saying nothing was written; an import between two batches,
each item before it journalled, the answer and log saying how far it got and that importing the
file again brings the rest. One whose caller still waits runs to its end."""

import asyncio
import json
import logging

import pytest
import uvloop

from memoryd.data import importrun
from memoryd.memory import notes
from proto import peer
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

ITEMS = 12


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock())
    yield m
    m.close()


def hand_in(m: Memoryd) -> None:
    head = {"format": "boxmaker-memory-export", "version": 1, "memoryd": "0.2.0"}
    head["exported"] = "2026-11-01T00:00:00Z"
    lines = [json.dumps(head)]
    for n in range(ITEMS):
        prov = {"file": "notes.md", "session": "elsewhere", "edit": f"2026-10-01-{n:06d}"}
        prov |= {"time": "2026-10-01T00:00:00Z", "class": "private", "untrusted": False}
        item = {"kind": "note", "note": "noted", "text": f"imported fact {n}", "provenance": prov}
        lines.append(json.dumps(item))
    (m.home.root / "backups" / "gone.jsonl").write_text("\n".join(lines) + "\n")


def gone_after(asked: int):
    calls = [0]

    def gone() -> bool:
        calls[0] += 1
        return calls[0] > asked

    return gone


def imported(m: Memoryd) -> int:
    data = m.home.memory_file("notes.md").read_bytes()
    return sum(1 for n in notes.parse(data) if n.text.startswith("imported fact"))


def run_import(m: Memoryd, gone, dry_run: bool) -> dict:
    token = peer.hold(gone)
    try:
        return m.data("import", name="gone.jsonl", dry_run=dry_run)
    finally:
        peer._current.reset(token)


def test_a_dry_run_stops_once_its_caller_is_gone(md):
    hand_in(md)
    with pytest.raises(Exception, match="bxctl stopped waiting") as refused:
        run_import(md, gone_after(3), dry_run=True)
    assert "the dry run stopped at item 4 of 12" in str(refused.value)
    assert "nothing was written" in str(refused.value)
    assert imported(md) == 0


def test_an_import_stops_between_batches_once_its_caller_is_gone(md, monkeypatch, caplog):
    monkeypatch.setattr(importrun, "BATCH_SECONDS", 0.0)  # one item a batch
    hand_in(md)
    caplog.set_level(logging.INFO, logger=importrun.__name__)
    with pytest.raises(Exception, match="bxctl stopped waiting") as refused:
        run_import(md, gone_after(5), dry_run=False)
    said = str(refused.value)
    assert "the import stopped at item 6 of 12" in said, said
    assert "imported before it: 5 items" in said, said
    assert "importing the file again brings the rest" in said
    assert imported(md) == 5  # each item before the stop written and journalled, no other
    assert any("bxctl stopped waiting" in r.getMessage() for r in caplog.records)
    out = run_import(md, lambda: False, dry_run=False)  # again: the rest, what is there skipped
    assert (out["applied"], out["skipped"]) == (ITEMS - 5, 5), out["message"]
    assert imported(md) == ITEMS


def test_an_import_whose_caller_waits_runs_to_its_end(md):
    hand_in(md)
    out = run_import(md, lambda: False, dry_run=True)
    assert out["applied"] == ITEMS
    out = run_import(md, lambda: False, dry_run=False)
    assert out["applied"] == ITEMS
    assert imported(md) == ITEMS


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_read_on_the_readers_asks_its_own_callers_probe(md, loop_kind):
    """The owner's read commands run on reader threads: an import there must see the probe of
    the connection it answers, which the connection's task holds, not none."""

    def probe() -> bool:
        return False

    async def on_a_connection():
        peer.hold(probe)
        return await md.service._read(peer.current)

    if loop_kind == "uvloop":
        seen = uvloop.run(on_a_connection())
    else:
        seen = asyncio.run(on_a_connection())
    assert seen is probe
