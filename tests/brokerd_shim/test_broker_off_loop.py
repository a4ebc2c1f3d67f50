"""brokerd-shim's files never hold its event loop: the ledger and audit log are written on one
writer thread, fixtures are read on a thread, and grants/ is re-read only when it changed.

Each test keeps a heartbeat on the event loop while a call meets a slow file (a slow fsync, a
slow read of a fixture); on the loop, the heartbeat would stall.
"""

import asyncio
import json
import os
import shutil
import time

import pytest

from brokerd_shim import audit as audit_module
from brokerd_shim import fixtures as fixtures_module
from brokerd_shim import grants as grants_module
from brokerd_shim.config import load_config
from brokerd_shim.fixtures import FixtureRuntime
from brokerd_shim.grants import GrantsWatcher
from brokerd_shim.server import build_broker
from proto.messages import ToolRequest, ToolRequestMessage

from .conftest import EXAMPLE_FIXTURES, EXAMPLE_GRANTS, write_config

SLOW = 0.6
FETCH = '{"url": "https://example.org/notes"}'


def message(call_id: str, session: str = "mm-off1", tool: str = "http_fetch", arguments=FETCH):
    return ToolRequestMessage(
        request=ToolRequest(session=session, call_id=call_id, tool=tool, arguments=arguments)
    )


async def longest_stall(work) -> tuple[object, float]:
    """(work's result, the longest the event loop went without running a 10 ms heartbeat)."""
    longest = 0.0
    done = asyncio.Event()

    async def heartbeat():
        nonlocal longest
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.05)  # the heartbeat is running before the work starts
    try:
        result = await work
    finally:
        done.set()
        await beat
    return result, longest


def broker_in(home, fixtures=None):
    config_path = write_config(home)
    shutil.copy(EXAMPLE_GRANTS / "http_fetch.toml", home / "grants" / "http_fetch.toml")
    config = load_config(config_path)
    runtime = FixtureRuntime(fixtures or EXAMPLE_FIXTURES)
    return build_broker(config, runtime)


def test_a_slow_audit_write_does_not_hold_the_event_loop(home, monkeypatch):
    broker = broker_in(home)
    real_append = audit_module.append_line

    def slow_append(path, line):
        time.sleep(SLOW)
        real_append(path, line)

    monkeypatch.setattr(audit_module, "append_line", slow_append)

    async def two_calls():
        return await asyncio.gather(broker.handle(message("c1")), broker.handle(message("c2")))

    try:
        answers, stall = asyncio.run(longest_stall(two_calls()))
    finally:
        broker.close()
    assert [a.ok for a in answers] == [True, True]
    assert stall < SLOW / 2, stall
    (month,) = (home / "audit").glob("*.jsonl")
    lines = [json.loads(text) for text in month.read_text().splitlines()]
    # one writer thread: each call's line is whole
    assert sorted((line["call_id"], line["ok"] is None) for line in lines) == [
        ("c1", False),
        ("c1", True),
        ("c2", False),
        ("c2", True),
    ]
    assert json.loads((home / "ledger" / "mm-off1.json").read_text())["untrusted"] is True


def test_a_slow_fixture_read_does_not_hold_the_event_loop(home, monkeypatch):
    broker = broker_in(home)
    real_read = fixtures_module._read

    def slow_read(path, limit):
        time.sleep(SLOW)
        return real_read(path, limit)

    monkeypatch.setattr(fixtures_module, "_read", slow_read)
    try:
        answer, stall = asyncio.run(longest_stall(broker.handle(message("c1"))))
    finally:
        broker.close()
    assert answer.ok, answer.output
    assert stall < SLOW / 2, stall


def test_grants_are_not_listed_again_while_nothing_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(grants_module, "SETTLED_NS", 0, raising=False)
    shutil.copy(EXAMPLE_GRANTS / "http_fetch.toml", tmp_path / "web.toml")
    watcher = GrantsWatcher(tmp_path)
    assert [g.id for g in watcher.current().grants] == ["web"]
    listed = []
    real_scandir = os.scandir
    monkeypatch.setattr(
        grants_module.os, "scandir", lambda path: listed.append(path) or real_scandir(path)
    )
    for _ in range(5):
        assert [g.id for g in watcher.current().grants] == ["web"]
    assert listed == []
    # a file rewritten in place (the folder's own stamp unchanged) is seen by its stat
    folder_times = os.stat(tmp_path)
    (tmp_path / "web.toml").write_text("tool = 1\n")
    os.utime(tmp_path / "web.toml", ns=(1, 1))
    os.utime(tmp_path, ns=(folder_times.st_atime_ns, folder_times.st_mtime_ns))
    assert not watcher.current().valid
    assert len(listed) >= 1
    # a file added is seen by the folder's stamp
    shutil.copy(EXAMPLE_GRANTS / "http_fetch.toml", tmp_path / "web.toml")
    shutil.copy(EXAMPLE_GRANTS / "http_fetch.toml", tmp_path / "more.toml")
    os.utime(tmp_path, ns=(2, 2))
    assert [g.id for g in watcher.current().grants] == ["more", "web"]


def test_a_grant_changed_within_the_settling_time_is_still_seen(tmp_path):
    watcher = GrantsWatcher(tmp_path)
    assert watcher.current().grants == ()
    for n in range(3):
        shutil.copy(EXAMPLE_GRANTS / "http_fetch.toml", tmp_path / f"g{n}.toml")
        assert len(watcher.current().grants) == n + 1


def test_a_call_that_arrives_after_close_is_refused_with_a_reason(home):
    from brokerd_shim.errors import Stopping

    broker = broker_in(home)
    broker.close()
    with pytest.raises(Stopping):
        asyncio.run(broker.handle(message("c9")))
    assert not (home / "ledger" / "mm-off1.json").exists()
