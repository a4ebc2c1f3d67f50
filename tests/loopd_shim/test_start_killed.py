"""A session start killed at any point (SIGKILL, the OOM killer, a stop past its grace) leaves the
session whole or nothing that blocks its id: after loopd-shim is started again, the session is
either there with its baseline and usable, or a start of the same id makes it. No temporary folder
of the start is left in sessions/, and memoryd never takes one for a session.

A folder holding neither baseline nor log (empty, or only a baseline's temporary file: what a start
killed after its mkdir left before the folder was built under a temporary name) is a start that
never finished: a message to it says so, and a start of that id takes it."""

import asyncio
import os
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

from loopd_shim.server import serve
from loopd_shim.sessionfolder import TEMP
from memoryd.home import Home
from memoryd.index.newindex import indexable_sessions
from proto.client import RemoteError
from proto.messages import OwnerMessage, SessionStart

SESSION = "s-kill"
EXISTS = f"session {SESSION} exists; a session's baseline is never rebuilt"

# The child starts the session as loopd-shim does (SessionStore.create) and is killed just before
# or just after one of its steps.
_CHILD = """
import os, signal, sys
from pathlib import Path
import loopd_shim.sessions as sessions
root, step, when = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
owner = sessions.os if step in ("chmod", "rename") else sessions
real = getattr(owner, step)
def dying(*args, **kwargs):
    if when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
setattr(owner, step, dying)
sessions.SessionStore(root).create(sys.argv[4], "the system prompt", [])
"""

STEPS = ["chmod", "atomic_write", "rename", "create_if_missing", "fsync_dir"]


def killed_start(sessions, step: str, when: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(sessions), step, when, SESSION],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr


@contextmanager
def serving(fakes):
    """loopd-shim serving beside the fakes, started now (as the stack fixture starts it), once it
    answers."""
    stop = asyncio.Event()
    loop = fakes.background.loop
    future = asyncio.run_coroutine_threadsafe(serve(fakes.config, stop), loop)
    for _ in range(500):
        if fakes.config.control_socket.exists() or future.done():
            break
        threading.Event().wait(0.01)
    if future.done():
        future.result()
    # Answering: what serve does before it reads its first request is done.
    with pytest.raises(RemoteError, match="no session s-probe"):
        fakes.ask(OwnerMessage(session="s-probe", content="are you there?"))
    try:
        yield fakes
    finally:
        loop.call_soon_threadsafe(stop.set)
        future.result(5)


def usable(stack) -> None:
    """The session takes a message, and its log holds it."""
    stack.ask(OwnerMessage(session=SESSION, content="hello"))
    log = stack.config.sessions / SESSION / "0.jsonl"
    assert log.read_text().count("\n") == 1


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("step", STEPS)
def test_a_start_killed_at_any_step_leaves_the_session_whole_or_its_id_free(fakes, step, when):
    sessions = fakes.config.sessions
    killed_start(sessions, step, when)
    folder = sessions / SESSION
    # What memoryd sees meanwhile: a session with a log, or none; a building folder is no session
    # and not a misnamed log it would warn about.
    home = Home(fakes.config.home)
    skipped: dict[str, str] = {}
    listed = indexable_sessions(home, skipped)
    assert skipped == {}
    assert listed in ([], [SESSION])

    with serving(fakes) as stack:
        assert sorted(os.listdir(sessions)) in ([], [SESSION]), os.listdir(sessions)
        try:
            started = stack.ask(SessionStart(session=SESSION))
        except RemoteError as e:
            # The killed start had put its folder in place: it is a whole session.
            assert str(e) == EXISTS
            assert b"the system prompt" in (folder / "0.baseline.json").read_bytes()
        else:
            assert started.session == SESSION
        usable(stack)


def test_the_folder_of_a_start_killed_before_its_rename_is_removed_at_the_next_serve(fakes, caplog):
    sessions = fakes.config.sessions
    killed_start(sessions, "rename", "before")
    [building] = os.listdir(sessions)
    assert TEMP.fullmatch(building) and not (sessions / SESSION).exists()
    with caplog.at_level("WARNING"), serving(fakes):
        assert os.listdir(sessions) == []
    said = [r.getMessage() for r in caplog.records if building in r.getMessage()]
    assert len(said) == 1 and f"session {SESSION} that never finished" in said[0], said


@pytest.mark.parametrize("held", [[], [".0.baseline.json.0123456789ab.tmp"]])
def test_a_folder_with_neither_baseline_nor_log_is_a_start_that_never_finished(stack, held, caplog):
    folder = stack.config.sessions / SESSION
    folder.mkdir(mode=0o700)
    for name in held:
        (folder / name).write_text('{"session": "s-ki')
    with pytest.raises(RemoteError) as refused:
        stack.ask(OwnerMessage(session=SESSION, content="hello"))
    assert str(refused.value) == (
        f"session {SESSION} was never started: its folder {folder} holds neither baseline nor log"
        f" (a start that never finished); start it with: loopd-shim start --session {SESSION}"
    )
    with caplog.at_level("WARNING"):
        assert stack.ask(SessionStart(session=SESSION)).session == SESSION
    assert sorted(os.listdir(folder)) == ["0.baseline.json", "0.jsonl"]
    assert f"session {SESSION}: its folder {folder} held neither baseline nor log" in caplog.text
    usable(stack)


def test_a_folder_holding_other_files_is_refused_saying_what_is_there(stack):
    folder = stack.config.sessions / SESSION
    folder.mkdir(mode=0o700)
    (folder / "notes.txt").write_text("the owner's")
    said = f"{folder} holds neither baseline nor log, but files loopd-shim does not make"
    with pytest.raises(RemoteError) as refused:
        stack.ask(SessionStart(session=SESSION))
    assert str(refused.value) == (
        f"session {SESSION} cannot be started: {said}; move it away, then start the session again"
    )
    with pytest.raises(RemoteError) as refused:
        stack.ask(OwnerMessage(session=SESSION, content="hello"))
    assert str(refused.value) == (
        f"session {SESSION} was never started: {said}; move it away, then start it with:"
        f" loopd-shim start --session {SESSION}"
    )
    assert (folder / "notes.txt").read_text() == "the owner's"


def test_a_file_where_the_folder_would_be_is_refused_saying_so(stack):
    (stack.config.sessions / SESSION).write_text("not a folder")
    with pytest.raises(RemoteError) as refused:
        stack.ask(SessionStart(session=SESSION))
    assert str(refused.value) == (
        f"session {SESSION} cannot be started: {stack.config.sessions / SESSION} is not a folder;"
        " move it away, then start the session again"
    )
