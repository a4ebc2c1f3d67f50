"""A peer on the control socket cannot start sessions without end: past loopd.toml's [sessions]
max_open sessions open at once a start is refused in one line, with nothing written; a start that
failed is not counted, a session that has ended (no message for idle_minutes) no longer counts,
and a message to one that exists is never refused by the cap."""

import asyncio
import dataclasses
import threading

import pytest

from loopd_shim.config import load_config
from loopd_shim.errors import TooManySessions
from loopd_shim.opensessions import OpenSessions
from loopd_shim.server import serve
from proto.client import RemoteError
from proto.messages import OwnerMessage, SessionStart, SessionStarted


@pytest.fixture
def capped(fakes):
    """loopd-shim serving with [sessions] max_open = 3, beside the fakes."""
    config = dataclasses.replace(fakes.config, max_open_sessions=3)
    stop = asyncio.Event()
    future = asyncio.run_coroutine_threadsafe(serve(config, stop), fakes.background.loop)
    for _ in range(200):
        if config.control_socket.exists() or future.done():
            break
        threading.Event().wait(0.01)
    if future.done():
        future.result()
    yield fakes
    fakes.background.loop.call_soon_threadsafe(stop.set)
    future.result(5)


def sessions_on_disk(stack) -> list[str]:
    return sorted(p.name for p in stack.config.sessions.iterdir())


def test_a_start_past_max_open_is_refused_in_one_line_and_writes_nothing(capped):
    for n in range(3):
        assert isinstance(capped.ask(SessionStart(session=f"s-{n}")), SessionStarted)
    with pytest.raises(RemoteError) as refused:
        capped.ask(SessionStart(session="s-over"))
    text = str(refused.value)
    assert "\n" not in text
    assert "loopd-shim has 3 sessions open, loopd.toml's [sessions] max_open" in text
    assert "no session was started" in text
    assert "no message for 60 minutes" in text  # how one ends
    assert sessions_on_disk(capped) == ["s-0", "s-1", "s-2"]
    # the sessions open go on: a message to one is never refused by the cap
    capped.ask(OwnerMessage(session="s-1", content="still here"))


def test_a_start_that_failed_is_not_counted(capped):
    capped.memoryd.refuse = "memoryd is down"
    for n in range(4):
        with pytest.raises(RemoteError, match="memory is unavailable"):
            capped.ask(SessionStart(session=f"s-failed{n}"))
    capped.memoryd.refuse = None
    for n in range(3):
        capped.ask(SessionStart(session=f"s-{n}"))
    # starting one that exists again is refused as existing, and does not free a place
    with pytest.raises(RemoteError, match="exists"):
        capped.ask(SessionStart(session="s-0"))
    with pytest.raises(RemoteError, match="max_open"):
        capped.ask(SessionStart(session="s-3"))


def test_sessions_that_ended_do_not_count():
    now = [1000.0]
    table = OpenSessions(max_open=2, idle_minutes=1, clock=lambda: now[0])
    table.reserve("s-a")
    now[0] += 30
    table.reserve("s-b")
    with pytest.raises(TooManySessions, match="2 sessions open"):
        table.reserve("s-c")
    now[0] += 31  # s-a: 61 s without a message, ended; s-b: 31 s
    assert table.open_count() == 1
    table.reserve("s-c")
    table.used("s-a")  # a message to a session that ended opens it again, never refused
    assert table.open_count() == 3
    with pytest.raises(TooManySessions):
        table.reserve("s-d")
    now[0] += 120
    assert table.open_count() == 0


def test_max_open_and_idle_minutes_are_read_from_loopd_toml(tmp_path):
    (tmp_path / "system.md").write_text("You are a test.\n")
    path = tmp_path / "loopd.toml"
    path.write_text("[sessions]\nmax_open = 5\nidle_minutes = 2.5\n")
    config = load_config(path)
    assert (config.max_open_sessions, config.session_idle_minutes) == (5, 2.5)
    path.write_text("[sessions]\nmax_open = 0\n")
    with pytest.raises(Exception, match=r"\[sessions\] max_open must be a whole number from 1"):
        load_config(path)
