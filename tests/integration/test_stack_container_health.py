"""scripts/stack in containers tells a role's health by a request it must answer in time, and up
mends what it finds: a stopped (SIGSTOP) memoryd and a socket removed while memoryd runs are
restarted, saying why; a listener on a role's socket that never accepts cannot hold up or status
past their bounds; status's own asks leave no wrong-socket line in a role's log; a stopped
container's line says what to do; and with the image gone from podman's storage, restart leaves
the running role as it is and status says so in one line. On a temporary home, settings folder,
state folder, project and image tag, so an owner's stack is untouched.
"""

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.stack import IMAGE, REPO, short_temp_home

STACK = REPO / "scripts" / "stack"


class Stack:
    def __init__(self, root: Path, project: str, image: str):
        self.root, self.project = root, project
        self.home = root / "home"
        self.env = {
            **os.environ,
            "BOXMAKER_HOME": os.fspath(self.home),
            "BOXMAKER_CONFIG": os.fspath(root / "config"),
            "BOXMAKER_STACK_STATE": os.fspath(root / "state"),
            "BOXMAKER_PROJECT": project,
            "BOXMAKER_IMAGE": image,
        }

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            [os.fspath(STACK), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def bxctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [os.fspath(REPO / ".venv" / "bin" / "bxctl"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )

    def container(self, role: str) -> str:
        return f"{self.project}_{role}_1"

    def pid(self, role: str) -> int:
        out = podman("inspect", "--format", "{{.State.Pid}}", self.container(role))
        return int(out.stdout.strip())


def podman(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def stack(container_engine):
    if container_engine.rootless and os.getuid() == 0:
        pytest.fail("as root, scripts/stack runs rootful podman")
    root = short_temp_home("bx-health-")
    project = f"bxhealth{secrets.token_hex(3)}"
    image = f"localhost/bxtest-{project}:dev"
    subprocess.run(["podman", "tag", IMAGE, image], check=True, timeout=60)
    made = Stack(root, project, image)
    try:
        up = made.run("up")
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-3000:]
        yield made
    finally:
        made.run("down", timeout=300)
        podman("untag", image, image)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.container
def test_up_restarts_a_stopped_memoryd_and_one_whose_socket_was_removed(stack):
    # A stopped (SIGSTOP) memoryd accepts connections (the kernel does) but answers none.
    pid = stack.pid("memoryd")
    os.kill(pid, signal.SIGSTOP)
    try:
        up = stack.run("up", timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):  # up restarted it: the pid is gone
            os.kill(pid, signal.SIGCONT)
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-3000:]
    assert "restarting memoryd: " in up.stdout + up.stderr, up.stderr[-3000:]
    assert stack.bxctl("memory", "log").returncode == 0

    # Its owner socket removed while it runs: up makes it anew, and bxctl reaches it again.
    (stack.home / "run" / "owner-memory" / "admin.sock").unlink()
    sick = stack.run("status", timeout=120)
    assert sick.returncode == 1 and "memoryd: unhealthy: " in sick.stdout, sick.stdout
    began = time.monotonic()
    up = stack.run("up", timeout=120)
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-3000:]
    assert time.monotonic() - began < 60
    assert "restarting memoryd: nothing answers on " in up.stdout + up.stderr, up.stderr[-3000:]
    assert stack.bxctl("memory", "log").returncode == 0

    # A role of one socket, that socket removed within up's allowance for a start: up tells it
    # from a role still starting (it listens there) and restarts it at once.
    (stack.home / "run" / "loop-control" / "control.sock").unlink()
    began = time.monotonic()
    up = stack.run("up", timeout=120)
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-3000:]
    assert time.monotonic() - began < 45, up.stderr[-3000:]
    assert "restarting loopd-shim: nothing answers on " in up.stderr, up.stderr[-3000:]


@pytest.mark.container
def test_status_leaves_no_wrong_socket_line_and_says_what_to_do(stack):
    status = stack.run("status", timeout=120)
    assert status.returncode == 0, status.stdout + status.stderr
    for role in ("memoryd", "brokerd-shim", "loopd-shim"):
        logs = stack.run("logs", role, "200")
        assert "wrong-socket" not in logs.stdout + logs.stderr, (role, logs.stdout[-2000:])
    podman("stop", "-t", "2", stack.container("memoryd"))
    stopped = stack.run("status", timeout=120)
    assert stopped.returncode == 1
    line = next(x for x in stopped.stdout.splitlines() if x.startswith("memoryd: unhealthy"))
    assert "scripts/stack up starts it" in line, line


@pytest.mark.container
def test_a_listener_that_never_accepts_holds_neither_status_nor_up(stack):
    held = stack.home / "run" / "loop-control" / "control.sock"
    down = stack.run("down", timeout=300)
    assert down.returncode == 0, down.stderr
    held.unlink(missing_ok=True)
    holder = socket.socket(socket.AF_UNIX)
    try:
        holder.bind(os.fspath(held))
        holder.listen(0)
        os.chown(held, *(os.stat(held.parent).st_uid,) * 2)
        # Fill the backlog, so that a connect with no bound would wait for good.
        fillers = []
        for _ in range(4):
            filler = socket.socket(socket.AF_UNIX)
            filler.setblocking(False)
            try:
                filler.connect(os.fspath(held))
            except BlockingIOError:
                filler.close()
                break
            fillers.append(filler)
        began = time.monotonic()
        up = stack.run("up", timeout=200)
        assert time.monotonic() - began < 150, up.stdout[-2000:] + up.stderr[-2000:]
        status = stack.run("status", timeout=60)
        assert "loopd-shim: " in status.stdout
        for filler in fillers:
            filler.close()
    finally:
        holder.close()


@pytest.mark.container
def test_restart_with_the_image_gone_leaves_the_role_running(stack):
    image = stack.env["BOXMAKER_IMAGE"]
    podman("untag", image, image)
    status = stack.run("status", timeout=120)
    said = status.stdout + status.stderr
    assert "Error:" not in said and "not  that" not in said, said
    assert [x for x in said.splitlines() if image in x and "scripts/stack up" in x], said
    restart = stack.run("restart", "memoryd", timeout=120)
    assert restart.returncode == 1
    lines = [x for x in restart.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "scripts/stack up" in lines[0], restart.stderr
    assert podman("container", "exists", stack.container("memoryd")).returncode == 0
    assert stack.bxctl("memory", "log").returncode == 0
