"""scripts/stack in process mode on a home that something it did not start already serves: up
refuses in one line and starts nothing, rather than starting roles that exit at once while the
other's sockets answer its wait ("The stack is up", exit 0); and status never calls a role healthy
that does not run from its state folder. A memoryd in a container holds only index/memoryd.lock
(the home's root is the container's own tmpfs), so that lock is asked as well as the home
folder's; a shim's socket that answers already is refused too.
"""

import fcntl
import os
import shutil
import signal

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
        shutil.rmtree(made.root, ignore_errors=True)
    assert down.returncode == 0, down.stderr


def other_state(stack: CopiedStack, name: str = "other-state") -> dict[str, str]:
    return {**stack.env, "BOXMAKER_STACK_STATE": os.fspath(stack.root / name)}


def run(stack: CopiedStack, env: dict[str, str], *args: str):
    saved, stack.env = stack.env, env
    try:
        return stack.run(*args)
    finally:
        stack.env = saved


def test_up_refuses_a_home_whose_index_lock_is_held_as_a_containers_memoryd_holds_it(stack):
    stack.up()
    assert stack.run("down").returncode == 0
    lock = stack.root / "home" / "index" / "memoryd.lock"
    held = os.open(lock, os.O_RDWR)  # this test stands for the container's memoryd
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        up = stack.run("up")
        assert up.returncode == 1, up.stderr[-2000:]
        said = up.stderr.splitlines()[-1]
        assert said.startswith(f"error: {lock} is locked by another program (pid {os.getpid()}"), (
            said
        )
        assert "started memoryd" not in up.stderr and "The stack is up" not in up.stdout
        assert not list(stack.state.glob("*.pid"))
    finally:
        os.close(held)


def test_up_refuses_a_home_whose_shim_socket_another_stack_serves(stack):
    # Another state folder's stack lost its memoryd; its shims still answer on their sockets.
    other = other_state(stack)
    try:
        assert run(stack, other, "up").returncode == 0
        theirs = stack.root / "other-state"
        os.kill(int((theirs / "memoryd.pid").read_text()), signal.SIGKILL)
        up = stack.run("up")
        assert up.returncode == 1, up.stderr[-2000:]
        assert "The stack is up" not in up.stdout
        said = up.stderr.splitlines()[-1]
        broker = stack.root / "home" / "run/loop-broker/broker.sock"
        assert said.startswith(
            f"error: {broker} already answers, yet brokerd-shim does not run from {stack.state}"
        ), said
        assert not list(stack.state.glob("*.pid")), "nothing is started"
    finally:
        assert run(stack, other, "down").returncode == 0


def test_status_never_says_healthy_of_a_role_that_does_not_run_from_its_state(stack):
    # A state folder whose roles died (a crash), on a home another state folder's stack serves.
    stack.up()
    dead = stack.root / "dead-state"
    dead.mkdir()
    (dead / "mode").write_text("process\n")
    status = run(stack, other_state(stack, "dead-state"), "status")
    assert status.returncode == 1, status.stdout
    lines = status.stdout.splitlines()
    for name in SERVICES:
        assert f"{name}: not running" in lines, status.stdout
        assert not any(line.startswith(f"{name}: healthy") for line in lines), status.stdout
        assert (
            f"{name}: unhealthy: not running from {dead}, and its sockets are answered by another"
            " process (a stack from another state folder or clone, or in containers), which up"
            " refuses to run beside"
        ) in lines, status.stdout
    assert "index: not asked: memoryd is unhealthy (above)" in lines
