"""scripts/stack in process mode tells a role's health by a request it must answer in time: a
socket removed right after a start (a role with one socket, still within up's allowance for a
start) is told from a role still starting by what the role listens on, so up restarts it at once;
a stopped (SIGSTOP) role is unhealthy within status's bound and up restarts it. No engine needed.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import time

import pytest

from tests.integration.stack import REPO, short_temp_home

STACK = REPO / "scripts" / "stack"


@pytest.fixture
def stack():
    root = short_temp_home("bx-phealth-")
    env = {
        **os.environ,
        "BOXMAKER_HOME": os.fspath(root / "home"),
        "BOXMAKER_CONFIG": os.fspath(root / "config"),
        "BOXMAKER_STACK_STATE": os.fspath(root / "state"),
        "BOXMAKER_STACK": "process",
    }

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [os.fspath(STACK), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    try:
        up = run("up")
        assert up.returncode == 0, up.stderr[-3000:]
        yield root, run
    finally:
        run("down")
        shutil.rmtree(root, ignore_errors=True)


def test_a_removed_socket_of_a_one_socket_role_is_restarted_at_once(stack):
    root, run = stack
    (root / "home/run/loop-control/control.sock").unlink()
    began = time.monotonic()
    up = run("up", timeout=120)
    assert up.returncode == 0, up.stderr[-3000:]
    assert time.monotonic() - began < 45, up.stderr[-3000:]
    assert "loopd-shim: nothing answers on " in up.stderr and "restarting" in up.stderr, up.stderr
    assert "loopd-shim: healthy" in run("status").stdout


def test_a_stopped_role_is_unhealthy_within_the_bound_and_up_restarts_it(stack):
    root, run = stack
    pid = int((root / "state/brokerd-shim.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        status = run("status", timeout=120)
        assert time.monotonic() - began < 30
        assert status.returncode == 1
        assert "brokerd-shim: unhealthy: no answer on " in status.stdout, status.stdout
        up = run("up", timeout=120)
        assert up.returncode == 0, up.stderr[-3000:]
        assert "brokerd-shim: no answer on " in up.stderr, up.stderr
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert run("status").returncode == 0


def test_status_ends_quietly_when_its_reader_goes(stack):
    """status | head, status | grep -m1 healthy: once the reader has what it wanted, the lines
    status still prints end it as they end the shell's own commands, with no traceback."""
    root, run = stack
    lines = run("status").stdout.splitlines()
    env = {
        **os.environ,
        "BOXMAKER_HOME": os.fspath(root / "home"),
        "BOXMAKER_CONFIG": os.fspath(root / "config"),
        "BOXMAKER_STACK_STATE": os.fspath(root / "state"),
        "BOXMAKER_STACK": "process",
    }
    readers = [f"head -n {n}" for n in range(1, len(lines))] + ["grep -m1 healthy"]
    for reader in readers:
        piped = subprocess.run(
            ["bash", "-c", f'"$0" status | {reader}', os.fspath(STACK)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert piped.stdout, reader
        assert "Traceback" not in piped.stderr and "Error" not in piped.stderr, (reader, piped)


def test_a_refused_memory_block_is_named_with_its_entry_and_not_restarted(stack):
    """memoryd answering but refusing the block (here memory.md removed) is reached: status names
    the refusal and the entry, not "cannot reach ... restart makes it anew", and up leaves it
    running, since a restart would make memory.md anew, empty, with nothing said of the undo
    that brings its entries back; the entry says that."""
    root, run = stack
    pid = int((root / "state/memoryd.pid").read_text())
    (root / "home/memory/memory.md").unlink()
    status = run("status", timeout=120)
    assert status.returncode == 1
    said = (
        "refused the memory block: memory.md is missing, so no new session starts"
        " (runbook: memory-unavailable)"
    )
    [line] = [line for line in status.stdout.splitlines() if line.startswith("memoryd: unhealthy")]
    assert line.endswith(said) and "cannot reach" not in line, line
    began = time.monotonic()
    up = run("up", timeout=180)
    assert time.monotonic() - began < 45, up.stderr[-3000:]
    assert up.returncode == 1
    assert f"{said}; it goes on running (pid {pid})" in up.stderr, up.stderr[-3000:]
    assert int((root / "state/memoryd.pid").read_text()) == pid
    assert not (root / "home/memory/memory.md").exists()
    steps = (REPO / "runbook/memory-unavailable.md").read_text().split("## What to do")[1]
    assert "If a file is missing" in steps and "bxctl memory undo ID" in steps
