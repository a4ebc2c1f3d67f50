"""A recall mode changed since memoryd last ran: its tables are built once memoryd listens, not
before (seconds at a few hundred thousand records); meanwhile memoryd serves, and recall is
refused in one line saying why. A stop interrupts that build, the index as it was; a build that
fails for another reason than a full disk (test_index_full_disk.py) leaves recall refused as
damaged until a reindex."""

import asyncio
import json
import logging
import sqlite3
import threading
import time

import pytest

from memoryd import modes
from memoryd.config import load
from memoryd.errors import IndexDamaged
from memoryd.home import Home
from memoryd.index import index as index_module
from memoryd.index.index import DAMAGED, Index
from memoryd.server import prepare
from proto.client import request
from proto.messages import MemoryAdmin, MemoryCall, Reindex, ToolRequest
from tests.memoryd.test_index import write_log
from tests.memoryd.test_scheduling import _call
from tests.memoryd.test_service import Running
from tests.memoryd.test_socket_cleanup import _config
from tests.recalling import recall_on

CONTEXT = '[recall]\nmode = "context"\n'
# Long enough (tens of seconds) that only an interrupt ends it in time; finite all the same.
LONG = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500000000)"
    " SELECT count(*) FROM c"
)


def _spec_index(tmp_path) -> Home:
    """A home whose index was built in mode spec, with rows."""
    home = Home(tmp_path / "home")
    write_log(home, "mm-1", ["the launch window moved to Thursday", "kestrel on the roof"])
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    return home


def _recorded(home: Home) -> str:
    conn = sqlite3.connect(home.index_db)
    try:
        return modes.recorded(conn)
    finally:
        conn.close()


MEANWHILE = "(recall mode context is being prepared, changed since memoryd last ran: these hits"


def test_a_deferred_mode_answers_by_the_spec_until_prepared(tmp_path):
    home = _spec_index(tmp_path)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        assert index.mode_pending and _recorded(home) == "spec"
        meanwhile = recall_on(index, "launch window", session="mm-ask").text
        assert meanwhile.startswith("[1] ") and "the launch window moved" in meanwhile
        assert meanwhile.splitlines()[-1].startswith(MEANWHILE)
        index.prepare_mode()
        assert not index.mode_pending and _recorded(home) == "context"
        after = recall_on(index, "launch window", session="mm-ask").text
        assert after.startswith("[1] ") and "being prepared" not in after
    finally:
        index.close()


@pytest.mark.parametrize("mode", ["spec", "context"])
def test_nothing_is_deferred_when_nothing_is_to_build(tmp_path, mode):
    home = Home(tmp_path / "home")
    for _ in range(2):  # created, then opened as it is
        index = Index(home, mode=mode)
        index.open(defer_mode=True)
        assert not index.mode_pending
        index.close()


def _recall(running: Running):
    req = ToolRequest(
        session="mm-ask",
        call_id="r1",
        tool="recall",
        arguments=json.dumps({"query": "launch window"}),
    )
    return request(
        running.cfg.broker_socket, MemoryCall(request=req, taint="private", untrusted=False)
    )


def _slow_prepare(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """modes.prepare, held until released (a long build)."""
    started, release = threading.Event(), threading.Event()
    real = modes.prepare

    def held(conn, mode, path="index", fresh=False):
        started.set()
        release.wait(20)
        return real(conn, mode, path, fresh)

    monkeypatch.setattr(index_module.modes, "prepare", held)
    return started, release


def test_memoryd_serves_while_a_changed_mode_is_prepared(tmp_path, monkeypatch):
    home = _spec_index(tmp_path)
    started, release = _slow_prepare(monkeypatch)
    running = Running(home.root, _config(tmp_path, CONTEXT))
    try:
        assert running.ready.is_set() and started.wait(10)
        meanwhile = _recall(running)
        assert meanwhile.ok and "the launch window moved" in meanwhile.output
        lines = meanwhile.output.splitlines()
        assert lines[-2].startswith(MEANWHILE)
        # The log the index had read to its end is counted before the build, not after it.
        assert lines[-1] == "(the index is catching up: 1 of 1 session logs read)"
        assert (
            "recall in the last"
            in request(running.cfg.admin_socket, MemoryAdmin(command="stats", arg="{}")).text
        )
        release.set()
        assert running.service.caught_up.wait(20)
        assert _recall(running).output.startswith("[1] ")
    finally:
        release.set()
        running.stop()
    assert _recorded(home) == "context"


@pytest.mark.parametrize("between", [False, True], ids=["during a statement", "between statements"])
def test_a_stop_interrupts_the_build_of_a_changed_mode(tmp_path, monkeypatch, caplog, between):
    home = _spec_index(tmp_path)
    started = threading.Event()
    stopping = threading.Event()
    real_stop = Index.stop_preparing

    def stop_preparing(self):
        real_stop(self)
        stopping.set()

    def long_build(conn, mode, path="index", fresh=False):
        conn.execute("CREATE TABLE half_built (x)")
        started.set()
        if between:  # the stop comes while no statement of the build is running
            assert stopping.wait(10)
        conn.execute(LONG)

    monkeypatch.setattr(Index, "stop_preparing", stop_preparing)
    monkeypatch.setattr(index_module.modes, "prepare", long_build)
    running = Running(home.root, _config(tmp_path, CONTEXT))
    try:
        assert started.wait(10)
        began = time.monotonic()
    finally:
        with caplog.at_level(logging.INFO):
            running.stop()
    assert not running.thread.is_alive() and time.monotonic() - began < 5
    assert _recorded(home) == "spec"
    conn = sqlite3.connect(home.index_db)
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "half_built" not in names  # rolled back
    assert any("not built, memoryd stopping" in r.getMessage() for r in caplog.records)


def _build_fails_once(monkeypatch) -> None:
    """The first build of a mode's tables fails as on a damaged file; the next ones build."""
    real = modes.prepare
    calls = []

    def fails_once(conn, mode, path="index", fresh=False):
        calls.append(mode)
        if len(calls) == 1:
            error = sqlite3.DatabaseError("database disk image is malformed")
            error.sqlite_errorcode = sqlite3.SQLITE_CORRUPT
            raise error
        return real(conn, mode, path, fresh)

    monkeypatch.setattr(index_module.modes, "prepare", fails_once)


def test_a_mode_that_failed_to_build_is_damaged_until_a_reindex(tmp_path, monkeypatch, caplog):
    home = _spec_index(tmp_path)
    _build_fails_once(monkeypatch)
    service = prepare(load(_config(tmp_path, CONTEXT)))

    async def scenario():
        await service.catch_up()
        with pytest.raises(IndexDamaged) as refused:
            await service.on_broker(_call("recall", {"query": "launch window"}))
        await service.on_admin(Reindex())
        found = await service.on_broker(_call("recall", {"query": "launch window"}))
        return refused.value, found

    try:
        with caplog.at_level(logging.ERROR):
            refused, found = asyncio.run(scenario())
    finally:
        service.close()
    assert str(refused) == DAMAGED
    assert found.output.startswith("[1] ")
    # Errors only: the start's warning that this home of logs lacks its soul.md is not the build's.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        f"index {home.index_db}: recall mode context: not built: database disk image is malformed"
    ]


def test_a_build_is_said_built_only_once_it_has_committed(tmp_path, monkeypatch, caplog):
    """A build whose transaction then fails (a full disk at its commit) was not made: the log
    says it waits, not that the mode was built from the rows, and says built once it stands."""
    home = _spec_index(tmp_path)
    real = modes.prepare
    calls = []

    def commit_fails_once(conn, mode, path="index", fresh=False):
        done = real(conn, mode, path, fresh)
        calls.append(mode)
        if len(calls) == 1:  # the rows are in, then the transaction fails as on a full disk
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = sqlite3.SQLITE_FULL
            raise error
        return done

    monkeypatch.setattr(index_module.modes, "prepare", commit_fails_once)
    service = prepare(load(_config(tmp_path, CONTEXT)))
    try:
        with caplog.at_level(logging.INFO):
            asyncio.run(service.catch_up())  # the build fails, then the catch-up tries again
    finally:
        service.close()
    lines = [r.getMessage() for r in caplog.records]
    said = [n for n, line in enumerate(lines) if "recall mode context" in line]
    assert [lines[n] for n in said] == [
        f"index {home.index_db}: recall mode context: not built: the disk is full;"
        " tried again once there is room",
        f"index {home.index_db}: recall mode context (was spec): built from 2 rows",
    ]


def test_a_new_file_in_context_is_not_said_to_have_been_spec(tmp_path, caplog):
    """A new home's index (and a reindex's file) starts with the spec's schema only because every
    index does: it was never in spec, so its build names no mode it was before."""
    home = Home(tmp_path / "home")
    write_log(home, "mm-1", ["the launch window moved to Thursday"])
    index = Index(home, mode="context")
    with caplog.at_level(logging.INFO):
        index.open()
        index.catch_up_all()
        index.reindex()
    index.close()
    said = [r.getMessage() for r in caplog.records if "recall mode context" in r.getMessage()]
    assert len(said) == 1, said  # the reindex's build is not logged apart
    assert all("(a new file)" in line and "was spec" not in line for line in said), said
    # A file that was spec is still said to have been.
    reopened = Index(home, mode="spec")
    reopened.open()
    reopened.close()
    with caplog.at_level(logging.INFO):
        again = Index(home, mode="context")
        again.open()
        again.close()
    assert "recall mode context (was spec): built from 1 row" in caplog.text
