"""scripts/stack in containers says what is wrong and mends what it can, when the home or a
container was changed by hand: a socket folder the roles (10001, no capabilities) may not enter is
unhealthy even though root on the host is let through, and up gives every folder back its 0700
(and its owner); a home chowned to root is pointed at what mends it, and restart mends it too; a
paused container is said as paused, unpaused by up and restart, and removed by down; a container
removed by hand is made again by up and restart, saying so, and logs says it has none in one
line; a container killed by SIGKILL says its exit code and its memory limit in status and logs.
On a temporary home, settings, state, project and image tag, so an owner's stack is untouched.
"""

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.stack import IMAGE, REPO, short_temp_home
from tests.integration.test_stack_container_health import Stack, podman


@pytest.fixture
def stack(container_engine):
    if container_engine.rootless and os.getuid() == 0:
        pytest.fail("as root, scripts/stack runs rootful podman")
    root = short_temp_home("bx-mend-")
    project = f"bxmend{secrets.token_hex(3)}"
    image = f"localhost/bxtest-{project}:dev"
    subprocess.run(["podman", "tag", IMAGE, image], check=True, timeout=60)
    made = Stack(root, project, image)
    try:
        up = made.run("up")
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-3000:]
        yield made
    finally:
        for role in ("memoryd", "brokerd-shim", "loopd-shim"):
            podman("unpause", made.container(role))
        made.run("down", timeout=300)
        for role in ("memoryd", "brokerd-shim", "loopd-shim"):
            podman("rm", "-f", "-t", "1", made.container(role))
        podman("untag", image, image)
        shutil.rmtree(root, ignore_errors=True)


def state(stack: Stack, role: str) -> str:
    out = podman("inspect", "--format", "{{.State.Status}}", stack.container(role))
    return out.stdout.strip() or "missing"


def start_session(stack: Stack, session: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [os.fspath(REPO / ".venv" / "bin" / "loopd-shim"), "start", "--session", session],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def folders_not_0700(home: Path) -> list[str]:
    return [
        f"{p} {p.stat().st_mode & 0o7777:o}"
        for p in home.rglob("*")
        if p.is_dir() and p.stat().st_mode & 0o7777 != 0o700
    ]


@pytest.mark.container
def test_modes_and_owners_the_roles_cannot_use_are_said_and_up_mends_them(stack):
    if os.getuid() != 0:
        pytest.skip("only rootful podman runs the roles as a uid other than the caller's")
    # The socket folder loses its x bit: root's probe gets through, loopd-shim's 10001 does not.
    (stack.home / "run" / "loop-memory").chmod(0o600)
    status = stack.run("status", timeout=120)
    assert status.returncode == 1, status.stdout
    sick = [line for line in status.stdout.splitlines() if line.startswith("memoryd: unhealthy")]
    assert sick and "Permission denied for the roles' user 10001" in sick[0], status.stdout
    assert "scripts/stack up gives them back" in sick[0], sick
    up = stack.run("up", timeout=300)
    assert up.returncode == 0, up.stderr[-3000:]
    assert start_session(stack, "mend1").returncode == 0
    assert stack.run("status", timeout=120).returncode == 0

    # A "private" home: every folder loses its owner's x bit; up gives each its 0700 back.
    for path in [*stack.home.rglob("*")]:
        if not path.is_socket():
            path.chmod(0o600)
    stack.home.chmod(0o700)
    up = stack.run("up", timeout=300)
    assert up.returncode == 0, up.stderr[-3000:]
    assert folders_not_0700(stack.home) == []
    assert state(stack, "memoryd") == "running"

    # memory/ made root's (a copy or restore as root): status points at what mends it, and
    # restart, which it may be tempting to run, mends it too.
    subprocess.run(["chown", "-R", "root:root", os.fspath(stack.home / "memory")], check=True)
    status = stack.run("status", timeout=120)
    assert "(scripts/stack restart memoryd makes it anew)" not in status.stdout, status.stdout
    restart = stack.run("restart", "memoryd", timeout=300)
    assert restart.returncode == 0, restart.stderr[-3000:]
    assert state(stack, "memoryd") == "running"
    assert stack.bxctl("memory", "log").returncode == 0


@pytest.mark.container
def test_paused_removed_and_killed_containers_are_said_and_mended(stack):
    memoryd = stack.container("memoryd")
    podman("pause", memoryd)
    status = stack.run("status", timeout=120)
    assert f"memoryd: unhealthy: its container {memoryd} is paused" in status.stdout
    up = stack.run("up", timeout=300)
    assert up.returncode == 0, up.stderr[-3000:]
    # (recreated instead where the sources changed since the image was built: no longer paused)
    said = (f"unpausing memoryd: its container {memoryd} was paused", "recreating memoryd: ")
    assert any(line in up.stderr for line in said), up.stderr[-3000:]
    assert state(stack, "memoryd") == "running"

    podman("pause", stack.container("loopd-shim"))
    restart = stack.run("restart", "loopd-shim", timeout=300)
    assert restart.returncode == 0, restart.stderr[-3000:]
    assert state(stack, "loopd-shim") == "running"

    # Removed by hand: logs says so in one line, up and restart make it again and say so.
    podman("rm", "-f", "-t", "1", memoryd)
    logs = stack.run("logs", "memoryd", "5")
    assert logs.returncode == 1 and "Error:" not in logs.stderr, logs.stderr
    assert logs.stderr.strip().splitlines() == [
        f"error: memoryd has no container {memoryd} (removed by hand?), so no log is left;"
        " scripts/stack up makes it again"
    ]
    up = stack.run("up", timeout=300)
    assert up.returncode == 0, up.stderr[-3000:]
    assert f"creating memoryd: it has no container {memoryd}" in up.stderr
    podman("rm", "-f", "-t", "1", memoryd)
    restart = stack.run("restart", "memoryd", timeout=300)
    assert restart.returncode == 0, restart.stderr[-3000:]
    assert state(stack, "memoryd") == "running"

    # Killed (SIGKILL, as at its memory limit): status and logs say the code and the limit.
    podman("kill", "-s", "KILL", memoryd)
    podman("wait", memoryd)
    status = stack.run("status", timeout=120)
    said = (
        "it last exited with code 137 (killed by SIGKILL: most likely at its memory limit"
        " of 1024 MiB"
    )
    assert said in status.stdout, status.stdout
    assert said in stack.run("logs", "memoryd", "5").stderr

    # A paused container is removed by down too.
    podman("pause", stack.container("loopd-shim"))
    down = stack.run("down", timeout=300)
    assert down.returncode == 0, down.stderr
    left = podman("ps", "-a", "-q", "--filter", f"label=io.podman.compose.project={stack.project}")
    assert left.stdout.strip() == ""
