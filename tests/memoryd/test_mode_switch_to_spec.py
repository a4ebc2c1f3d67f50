"""A switch of the recall mode back to spec drops the old mode's tables a part at a time, as a
switch to another mode does (modes.drop_part): the first part sets them aside (the recall_mode
record dropped: the index is spec's at once, recall by the spec's search exact, no note), each
next one deletes at most DROP_BYTES of their rows or drops one found empty, each a writer job of
its own, so that a memory write sent meanwhile waits at most for a part rather than the DROP of
them all (about a minute at a million records). A stop between parts goes on at the next start,
a later switch to another mode goes on from what is set aside, and the file ends with the spec's
schema exactly."""

import asyncio
import logging
import sqlite3
import threading

import pytest

from memoryd import modes
from memoryd.config import load
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.owner import indexstate
from memoryd.server import prepare
from tests.memoryd.test_mode_build_drop import _aside, _hybrid_home, _old_bytes
from tests.memoryd.test_mode_build_parts import _as_in_one_go, _filling
from tests.memoryd.test_modes_context import schema
from tests.memoryd.test_reindex import append, contents
from tests.memoryd.test_scheduling import _call
from tests.memoryd.test_socket_cleanup import _config
from tests.recalling import recall_on

ROWS = 120  # as test_mode_build_drop's homes
BUDGET = 6_000  # modes.DROP_BYTES here: the old tables hold many times it


def _turns() -> list[dict]:
    return [
        {"type": "user", "time": "2026-05-01T10:00:00Z", "content": f"turn {n} " + "word " * 60}
        for n in range(ROWS)
    ]


def _home(tmp_path, monkeypatch, mode: str) -> Home:
    """A home whose index is in mode (context, or hybrid with every vector), over ROWS turns."""
    if mode == "hybrid":
        return _hybrid_home(tmp_path, monkeypatch)
    home = Home(tmp_path / "home")
    append(home, "mm-old", _turns())
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    index.close()
    return home


def _spec_as_made(tmp_path, home: Home) -> None:
    """The file is as an index made in spec from the same log: its schema and rows exactly."""
    fresh = Home(tmp_path / "fresh")
    append(fresh, "mm-old", _turns())
    index = Index(fresh)
    index.open()
    index.catch_up_all()
    index.close()
    assert _aside(home.index_db) == [] and _filling(home.index_db) == []
    assert schema(home.index_db) == schema(fresh.index_db)
    assert contents(home.index_db) == contents(fresh.index_db)


OLD = [
    "context_hits_data",
    "context_hits_idx",
    "context_hits_content",
    "context_hits_docsize",
    "vectors",
    "vector_pending",
]


@pytest.fixture()
def small_parts(monkeypatch):
    monkeypatch.setattr(modes, "DROP_BYTES", BUDGET)
    monkeypatch.setattr(modes, "FILL_BATCH", 10)


@pytest.mark.parametrize("was", ["context", "hybrid"])
def test_each_job_of_a_switch_to_spec_removes_a_bounded_part(
    tmp_path, monkeypatch, small_parts, caplog, was
):
    home = _home(tmp_path, monkeypatch, was)
    before = _old_bytes(home.index_db, OLD)
    assert before > 20 * BUDGET
    index = Index(home, mode="spec")
    caplog.set_level(logging.INFO, logger="memoryd.index.index")
    index.open(defer_mode=True)
    removed, left = [], before
    try:
        assert index.mode_clearing and not index.mode_pending
        index.catching_up = None
        while True:
            done = index.prepare_mode_part()
            now = _old_bytes(home.index_db, _aside(home.index_db))
            removed.append(left - now)
            left = now
            if len(removed) == 1:  # set aside: the index is spec's, its recall whole
                assert modes.recorded(sqlite3.connect(home.index_db)) == "spec"
                answer = recall_on(index, "turn 7", session="mm-ask").text
                assert "being prepared" not in answer and "meanwhile" not in answer
                assert indexstate.state(index).get("mode") is None
            if done:
                break
        assert not index.mode_clearing and not index.mode_pending
    finally:
        index.close()
    assert removed[0] == 0  # the first part renamed them aside
    assert len(removed) > 20  # not one job
    assert max(removed) <= BUDGET + 4_000  # DROP_BYTES and the row that reaches them
    assert sum(removed) == before
    said = [r.getMessage() for r in caplog.records if "recall mode spec" in r.getMessage()]
    assert said[-1] == f"index {home.index_db}: recall mode spec (was {was}): its tables dropped"
    _spec_as_made(tmp_path, home)


@pytest.mark.parametrize("then", ["spec-parts", "spec-sync", "context-parts", "hybrid-parts"])
def test_a_stop_part_way_through_a_switch_to_spec_is_gone_on_with(
    tmp_path, monkeypatch, small_parts, then
):
    home = _home(tmp_path, monkeypatch, "hybrid" if then.startswith("context") else "context")
    if then == "hybrid-parts":  # no vectors computed here, as in the build in one go compared
        pytest.importorskip("onnxruntime")
        from memoryd.modes import hybrid

        monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)
    index = Index(home, mode="spec")
    index.open(defer_mode=True)
    try:
        index.catching_up = None
        for _ in range(3):  # set aside, then two parts of their rows removed
            assert not index.prepare_mode_part()
    finally:
        index.close()  # as a stop (or a kill: each part is committed) between parts
    assert _aside(home.index_db) and modes.recorded(sqlite3.connect(home.index_db)) == "spec"
    mode, _, how = then.partition("-")
    index = Index(home, mode=mode)
    index.open(defer_mode=how == "parts")
    try:
        index.catching_up = None
        assert index.mode_clearing if mode == "spec" and how == "parts" else True
        while how == "parts" and not index.prepare_mode_part():
            pass
        assert not index.mode_pending and not index.mode_clearing
    finally:
        index.close()
    if mode == "spec":
        _spec_as_made(tmp_path, home)
    else:
        assert _aside(home.index_db) == [] and _filling(home.index_db) == []
        _as_in_one_go(home, tmp_path, mode)


def _held_removal(monkeypatch, held_at: int):
    """modes._remove_some (a part of the removal of what was set aside), the held_at'th call held
    until released; each call notes whether a memory write was in memory.md when it began."""
    real = modes._remove_some
    calls: list[bool] = []
    started, release = threading.Event(), threading.Event()
    seen: dict = {}

    def held(conn):
        memory = seen.get("memory")
        calls.append(memory is not None and "Written between parts" in memory.read_text())
        if len(calls) == held_at:
            started.set()
            release.wait(20)
        return real(conn)

    monkeypatch.setattr(modes, "_remove_some", held)
    return calls, started, release, seen


def test_a_write_sent_during_a_switch_to_spec_waits_for_one_part(
    tmp_path, monkeypatch, small_parts
):
    home = _home(tmp_path, monkeypatch, "context")
    calls, started, release, seen = _held_removal(monkeypatch, held_at=2)
    service = prepare(load(_config(tmp_path)))  # spec
    seen["memory"] = home.memory / "memory.md"
    write = _call("memory", {"action": "add", "file": "memory", "text": "Written between parts."})

    async def scenario():
        task = asyncio.create_task(service.catch_up())

        async def held_part() -> None:
            while not started.is_set():
                assert not task.done(), "the old tables went in one job: no part was held"
                await asyncio.sleep(0.01)

        await asyncio.wait_for(held_part(), 30)
        answer = asyncio.create_task(service.on_broker(write))
        while service._writer.waiting() == 0:  # queued behind the part held
            await asyncio.sleep(0.01)
        release.set()
        reply = await asyncio.wait_for(answer, 10)
        clearing = service.index.mode_clearing
        await asyncio.wait_for(task, 60)
        return reply, clearing

    try:
        reply, clearing = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert reply.ok and "Written between parts." in (home.memory / "memory.md").read_text()
    assert clearing  # answered while the old tables were still being dropped
    # The part after the held one found the write applied; the ones before it did not.
    assert calls[:2] == [False, False] and calls[2] is True
    assert _aside(home.index_db) == []
    assert modes.recorded(sqlite3.connect(home.index_db)) == "spec"
