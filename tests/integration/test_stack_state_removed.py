"""scripts/stack in process mode when its state folder (the mode, the pid files, the logs), or one
role's pid file, is removed while the stack runs: status names each role that still serves the
home, with its pid, and says the folder has no record of it (exit 1), never "mode: down"; down
stops a role that runs on this state folder's settings copy, and names with its pid and `kill PID`
one it cannot place, leaving it running (exit 1); up's refusal tells the two apart.
"""

import os
import shutil
import signal
import time

import pytest

from tests.integration.stack import SERVICES
from tests.integration.test_stack_process_converges import CopiedStack


@pytest.fixture
def stack():
    made = CopiedStack()
    try:
        yield made
    finally:
        down = made.run("down")
        for pid in getattr(made, "left", ()):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(made.root, ignore_errors=True)
    assert down.returncode == 0, down.stderr


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _ended(pid: int, limit: float = 15) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _with_state(stack: CopiedStack, name: str, *args: str):
    saved = stack.env
    stack.env = {**saved, "BOXMAKER_STACK_STATE": os.fspath(stack.root / name)}
    try:
        return stack.run(*args)
    finally:
        stack.env = saved


def test_a_removed_state_folder_is_no_stack_that_is_down_and_down_stops_its_roles(stack):
    stack.up()
    pids = {name: int(pid) for name, pid in stack.pids().items()}
    stack.left = list(pids.values())
    shutil.rmtree(stack.state)

    # logs and restart cannot reach roles with no record here: they say so, not "down".
    for command in (("logs", "memoryd"), ("restart", "loopd-shim")):
        refused = stack.run(*command)
        assert refused.returncode == 1, refused.stderr
        assert f"{stack.state} has no record of them" in refused.stderr, refused.stderr
        assert "scripts/stack down stops them" in refused.stderr, refused.stderr
    assert all(_alive(pid) for pid in pids.values())

    status = stack.run("status")
    assert status.returncode == 1, status.stdout
    lines = status.stdout.splitlines()
    assert not lines[0].startswith("mode: down"), status.stdout
    assert lines[0].startswith(f"mode: processes, but {stack.state} has no record of them"), lines
    for name, pid in pids.items():
        assert any(
            line.startswith(f"{name}: pid {pid}, but {stack.state} has no record of it")
            for line in lines
        ), status.stdout
        assert any(line.startswith(f"{name}: unhealthy: it runs (pid {pid})") for line in lines)

    down = stack.run("down")
    assert down.returncode == 0, down.stderr
    for name, pid in pids.items():
        assert f"stopped {name} (pid {pid}), which ran on the settings" in down.stderr, down.stderr
        assert _ended(pid), f"{name} (pid {pid}) still runs after down"
    after = stack.run("status")
    assert after.returncode == 1 and after.stdout.startswith("mode: down"), after.stdout


def test_a_memoryd_with_no_pid_file_is_told_apart_from_one_another_stack_runs(stack):
    stack.up()
    memoryd = int(stack.pids()["memoryd"])
    stack.left = [memoryd]
    # Another state folder's up is sent to the down of the state folder whose pid file names it.
    up = _with_state(stack, "other-state", "up")
    assert up.returncode == 1, up.stderr[-2000:]
    said = up.stderr.splitlines()[-1]
    assert f"stop it (BOXMAKER_STACK_STATE={stack.state} scripts/stack down)" in said, said
    (stack.state / "memoryd.pid").unlink()

    # From this state folder: its own memoryd, whose record is gone; down reaches it.
    up = stack.run("up")
    assert up.returncode == 1, up.stderr[-2000:]
    said = up.stderr.splitlines()[-1]
    assert said.startswith(f"error: memoryd (pid {memoryd}) already runs on "), said
    assert f"but {stack.state} has no record of it" in said, said
    assert said.endswith("stop it (scripts/stack down), then scripts/stack up"), said
    status = stack.run("status")
    assert status.returncode == 1
    assert any(
        line.startswith(f"memoryd: pid {memoryd}, but {stack.state} has no record of it")
        for line in status.stdout.splitlines()
    ), status.stdout

    # From another state folder it cannot be placed (no pid file names it): `kill PID`, which
    # reaches it, never a down that cannot.
    other = stack.root / "other-state"
    up = _with_state(stack, "other-state", "up")
    assert up.returncode == 1, up.stderr[-2000:]
    said = up.stderr.splitlines()[-1]
    assert said.startswith(f"error: another memoryd (pid {memoryd}) already runs on "), said
    assert f"stop it (kill {memoryd}), then scripts/stack up" in said, said
    status = _with_state(stack, "other-state", "status")
    assert status.returncode == 1
    served = f"memoryd: its sockets are served by pid {memoryd}, which was not started from {other}"
    assert any(line.startswith(served) for line in status.stdout.splitlines()), status.stdout
    down = _with_state(stack, "other-state", "down")
    assert down.returncode == 1, down.stderr
    assert f"memoryd is not stopped: its sockets are served by pid {memoryd}" in down.stderr
    assert f"stop it: kill {memoryd}" in down.stderr, down.stderr
    assert _alive(memoryd), "another state folder's down leaves it running"

    down = stack.run("down")
    assert down.returncode == 0, down.stderr
    assert f"stopped memoryd (pid {memoryd})" in down.stderr, down.stderr
    assert _ended(memoryd)
    for name in SERVICES:
        assert not (stack.state / f"{name}.pid").exists()
