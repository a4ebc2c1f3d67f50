"""A changed recall mode's tables are built a part at a time once memoryd listens, each part a
writer job of its own (modes.prepare_part): a memory write sent meanwhile is applied between two
parts, not after the whole build; recall and stats say how many rows are built; a kill or a stop
between parts leaves what the next start goes on from; and the logs read, the rows forgotten and
the logs read again between parts leave the mode's tables as a build in one go gives them."""

import asyncio
import json
import logging
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from memoryd import modes
from memoryd.config import load
from memoryd.data import purge
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.owner import indexstate
from memoryd.server import prepare
from proto.messages import MemoryAdmin
from tests.memoryd.test_mode_prepare import CONTEXT, MEANWHILE
from tests.memoryd.test_reindex import append, random_records
from tests.memoryd.test_scheduling import _call
from tests.memoryd.test_socket_cleanup import _config
from tests.recalling import recall_on

REPO = Path(__file__).resolve().parents[2]
PART = 3  # rows a part (modes.FILL_BATCH), so that a small home takes several parts


def _turns(session: str, count: int, start: int = 0) -> list[dict]:
    return [
        {"type": "user", "time": f"2026-05-01T10:{n % 60:02d}:00Z", "content": f"{session} {n}"}
        for n in range(start, start + count)
    ]


def _spec_home(tmp_path, sessions: dict[str, int]) -> Home:
    """A home whose index was built in mode spec, with the turns asked for."""
    home = Home(tmp_path / "home")
    for session, count in sessions.items():
        append(home, session, _turns(session, count))
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    return home


def _read(path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _tables(path, mode: str) -> dict[str, list[tuple]]:
    """The mode's tables, as compared: context's rows, and hybrid's pending rows and vectors."""
    found = {"context_hits": _read(path, "SELECT * FROM context_hits ORDER BY rowid")}
    if mode == "hybrid":
        for table in ("vector_pending", "vectors"):
            found[table] = _read(path, f"SELECT * FROM {table} ORDER BY rowid")  # noqa: S608
    return found


def _built_in_one_go(path, tmp_path, mode: str) -> dict[str, list[tuple]]:
    """The mode's tables as a build in one transaction from the file's spec tables gives them."""
    copy = tmp_path / "one-go.sqlite3"
    source, target = sqlite3.connect(path), sqlite3.connect(copy, isolation_level=None)
    try:
        source.backup(target)
        target.execute("BEGIN")
        modes.prepare(target, "spec")
        modes.prepare(target, mode)
        target.execute("COMMIT")
    finally:
        source.close()
        target.close()
    try:
        return _tables(copy, mode)
    finally:
        copy.unlink()


def _as_in_one_go(home: Home, tmp_path, mode: str = "context") -> None:
    assert _tables(home.index_db, mode) == _built_in_one_go(home.index_db, tmp_path, mode)


def _filling(path) -> list[tuple]:
    found = _read(path, f"SELECT name FROM sqlite_master WHERE name = '{modes.FILL}'")
    return _read(path, f"SELECT last, done, total FROM {modes.FILL}") if found else []  # noqa: S608


@pytest.fixture()
def parts(monkeypatch):
    monkeypatch.setattr(modes, "FILL_BATCH", PART)


def test_a_changed_mode_is_built_in_parts_and_serves_only_once_whole(tmp_path, parts):
    home = _spec_home(tmp_path, {"mm-1": 10, "mm-2": 5})
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        index.catching_up = None  # as once the start's catch-up has read every log
        done = [index.prepare_mode_part() for _ in range(3)]
        assert done == [False, False, False]
        # Recorded, but not whole: recall answers by the spec's search, saying how far.
        assert modes.recorded(sqlite3.connect(home.index_db)) == "context"
        assert _filling(home.index_db) == [(6, 6, 15)]
        answer = recall_on(index, "mm-1 3", session="mm-ask").text
        note = answer.splitlines()[-1]
        assert note.startswith(MEANWHILE) and note.endswith("; 6 of about 15 rows built)")
        lines = indexstate.lines(indexstate.state(index))
        assert "6 of about 15 rows built" in lines[0] and "being built" in lines[0]
        while not index.prepare_mode_part():
            pass
        assert not index.mode_pending and _filling(home.index_db) == []
        after = recall_on(index, "mm-1 3", session="mm-ask").text
        assert "being prepared" not in after
    finally:
        index.close()
    _as_in_one_go(home, tmp_path)


def test_a_small_index_is_built_in_one_part(tmp_path):
    home = _spec_home(tmp_path, {"mm-1": 4})
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        assert index.prepare_mode_part() is True
        assert not index.mode_pending
    finally:
        index.close()


def _between_parts(index: Index, home: Home, rng: random.Random, counts: dict[str, int]) -> None:
    """One of what may come between two parts: a log read further, a forget, a log read again
    (another file now, one line changed), a log read again from fewer records."""
    session = rng.choice(sorted(counts))
    what = rng.randrange(4)
    if what == 0:
        added = rng.randint(1, 4)
        append(home, session, random_records(rng, added))
        counts[session] += added
        index.catch_up_session(session)
    elif what == 1 and counts[session]:
        keys = [f"session:{session}:{rng.randrange(counts[session])}" for _ in range(2)]
        purge.purge(index, keys)
    elif what == 2:
        path = home.session_log(session)
        lines = path.read_text().splitlines(keepends=True)
        if lines:
            at = rng.randrange(len(lines))
            lines[at] = json.dumps(random_records(rng, 1)[0]) + "\n"
        other = path.with_name("0.jsonl.new")
        other.write_text("".join(lines))
        other.replace(path)
        index.catch_up_session(session)
    else:
        path = home.session_log(session)
        lines = path.read_text().splitlines(keepends=True)
        kept = lines[: max(0, len(lines) - rng.randint(1, 3))]
        path.write_text("".join(kept))
        append(home, session, random_records(rng, 2))
        counts[session] = len(kept) + 2
        index.catch_up_session(session)


@pytest.mark.parametrize("mode", ["context", "hybrid"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_what_comes_between_parts_leaves_the_tables_of_a_build_in_one_go(
    tmp_path, monkeypatch, parts, mode, seed
):
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
        from memoryd.modes import hybrid

        monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)  # no vectors computed here
    rng = random.Random(seed)
    counts = {f"mm-{n}": rng.randint(4, 12) for n in range(3)}
    home = Home(tmp_path / "home")
    for session, count in counts.items():
        append(home, session, random_records(rng, count))
    spec = Index(home)
    spec.open()
    spec.catch_up_all()
    spec.close()
    index = Index(home, mode=mode)
    index.open(defer_mode=True)
    try:
        parts_made = 0
        while not index.prepare_mode_part():
            parts_made += 1
            _between_parts(index, home, rng, counts)
            assert index.mode_pending
        assert parts_made >= 3
        index.catch_up_all()
        assert not index.mode_pending
    finally:
        index.close()
    _as_in_one_go(home, tmp_path, mode)


def test_rows_added_again_below_the_last_part_are_given_to_the_mode(tmp_path, parts):
    """The rows after the last part are all deleted, and the last part's last, and others added:
    the first takes a rowid the parts have passed already, so the indexer's hook gives it to the
    mode itself; the one after it is the parts'."""
    home = _spec_home(tmp_path, {"mm-1": 6, "mm-2": 6})
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        for _ in range(3):  # begun, then 6 rows: mm-1's
            assert not index.prepare_mode_part()
        purge.purge(index, [f"session:mm-2:{n}" for n in range(6)])
        purge.purge(index, ["session:mm-1:5"])
        append(home, "mm-1", _turns("mm-1", 2, start=6))
        index.catch_up_session("mm-1")
        # The first at the rowid the last part ended at (given by the hook), the next after it
        # (left to the parts).
        assert _read(home.index_db, "SELECT rowid FROM sources ORDER BY rowid")[-2:] == [(6,), (7,)]
        while not index.prepare_mode_part():
            pass
    finally:
        index.close()
    _as_in_one_go(home, tmp_path)


KILLED = """
import os
from pathlib import Path
from memoryd import modes
from memoryd.home import Home
from memoryd.index.index import Index

modes.FILL_BATCH = {part}
index = Index(Home(Path({home!r})), mode="context")
index.open(defer_mode=True)
for _ in range({parts}):
    assert index.prepare_mode_part() is False
os._exit(9)
"""


@pytest.mark.parametrize("killed_after", [1, 3])
@pytest.mark.parametrize("finished_by", ["parts", "open"])
def test_a_kill_between_parts_leaves_what_the_next_start_goes_on_from(
    tmp_path, parts, caplog, killed_after, finished_by
):
    home = _spec_home(tmp_path, {"mm-1": 9, "mm-2": 7})
    script = KILLED.format(part=PART, home=str(home.root), parts=killed_after)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], env=env, timeout=120, check=False
    )
    assert done.returncode == 9
    built = PART * (killed_after - 1)
    assert _filling(home.index_db) == [(built, built, 16)]
    index = Index(home, mode="context")
    try:
        with caplog.at_level(logging.INFO):
            if finished_by == "open":
                index.open()  # not deferred: finished in one go
            else:
                index.open(defer_mode=True)
                assert index.mode_pending
                answer = recall_on(index, "mm-1", session="mm-ask").text
                assert answer.splitlines()[-1].endswith(f"; {built} of about 16 rows built)")
                while not index.prepare_mode_part():
                    pass
        assert not index.mode_pending
    finally:
        index.close()
    assert _filling(home.index_db) == []
    _as_in_one_go(home, tmp_path)
    assert f"index {home.index_db}: recall mode context (was spec): built from 16 rows" in [
        r.getMessage() for r in caplog.records
    ]


def _held_part(monkeypatch, held_at: int):
    """modes.prepare_part, the held_at'th call held until released; each call notes whether a
    memory write's text was in memory.md when it began."""
    real = modes.prepare_part
    calls: list[bool] = []
    started, release = threading.Event(), threading.Event()
    seen: dict[str, Path] = {}

    def held(conn, mode, fresh=False):
        memory = seen.get("memory")
        calls.append(memory is not None and "Written between parts" in memory.read_text())
        if len(calls) == held_at:
            started.set()
            release.wait(20)
        return real(conn, mode, fresh)

    monkeypatch.setattr(modes, "prepare_part", held)
    return calls, started, release, seen


def test_a_write_sent_while_a_part_runs_is_applied_before_the_next_part(
    tmp_path, monkeypatch, parts
):
    home = _spec_home(tmp_path, {"mm-1": 10, "mm-2": 8})
    calls, started, release, seen = _held_part(monkeypatch, held_at=3)
    service = prepare(load(_config(tmp_path, CONTEXT)))
    seen["memory"] = home.memory / "memory.md"
    write = _call("memory", {"action": "add", "file": "memory", "text": "Written between parts."})

    async def scenario():
        task = asyncio.create_task(service.catch_up())
        while not started.is_set():
            await asyncio.sleep(0.01)
        stats = (await service.on_admin(MemoryAdmin(command="stats", arg="{}"))).text
        answer = asyncio.create_task(service.on_broker(write))
        while service._writer.waiting() == 0:  # queued behind the part held
            await asyncio.sleep(0.01)
        release.set()
        reply = await asyncio.wait_for(answer, 10)
        pending = service.index.mode_pending
        await asyncio.wait_for(task, 20)
        return stats, reply, pending

    try:
        stats, reply, pending = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert reply.ok and "Written between parts." in (home.memory / "memory.md").read_text()
    assert pending  # answered while the mode was still being built
    # The part after the held one found the write applied; the ones before it did not.
    assert calls[:3] == [False, False, False] and calls[3] is True
    assert "index: catching up, 2 of 2 session logs read" in stats
    assert "0 of 2 session logs read" not in stats
    assert "of about 18 rows built" in stats
    _as_in_one_go(home, tmp_path)


def test_a_stop_between_parts_keeps_them_for_the_next_start(tmp_path, monkeypatch, parts, caplog):
    home = _spec_home(tmp_path, {"mm-1": 10, "mm-2": 8})
    calls, started, release, _ = _held_part(monkeypatch, held_at=3)
    service = prepare(load(_config(tmp_path, CONTEXT)))

    async def scenario():
        task = asyncio.create_task(service.catch_up())
        while not started.is_set():
            await asyncio.sleep(0.01)
        # Stopped while the writer runs a part: it ends, the loop makes no other.
        service.begin_stop()
        release.set()
        await asyncio.wait_for(task, 20)

    try:
        with caplog.at_level(logging.INFO):
            asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert len(calls) == 3
    assert modes.recorded(sqlite3.connect(home.index_db)) == "context"
    assert _filling(home.index_db)  # not whole: the next start goes on
    said = [r.getMessage() for r in caplog.records if "recall mode context" in r.getMessage()]
    assert any("memoryd stopping; the next start goes on from the" in line for line in said)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        assert index.mode_pending
        while not index.prepare_mode_part():
            pass
    finally:
        index.close()
    _as_in_one_go(home, tmp_path)
