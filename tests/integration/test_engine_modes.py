"""What each container engine mode promises.

Rootless: `podman info` of the engine says rootless, each role runs as 10001 with no capabilities,
and what the roles write in the home belongs on the host to the user who runs podman (keep-id).
Every container has compose.yaml's memory and process limits, and no swap beyond the memory
limit, where podman can enforce them
(rootful; rootless needs cgroups v2, and on v1 podman says it ignores them). Each role's health
check answers while the role serves and fails within its deadline when the role is stopped.
"""

import json
import os

import pytest

from proto.health import check
from tests.integration.engines import compose_limits
from tests.integration.stack import SERVICES

pytestmark = pytest.mark.container


def test_rootless_engine_is_rootless_and_roles_have_no_capabilities(rootless_stack):
    engine = rootless_stack.engine
    info = engine.run("info", "--format", "json")
    assert info.returncode == 0, info.stderr
    host = json.loads(info.stdout)["host"]
    assert host["security"]["rootless"] is True
    for role in SERVICES:
        status = rootless_stack.exec(role, "cat", "/proc/self/status").stdout
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        assert fields["Uid"].split()[:2] == ["10001", "10001"], role
        assert fields["CapEff"].strip() == "0000000000000000", role
        assert fields["CapPrm"].strip() == "0000000000000000", role
    # keep-id: the files the roles made are the rootless user's on the host, not a subuid's.
    soul = rootless_stack.home / "memory" / "soul.md"
    assert soul.stat().st_uid == engine.host_uid
    if os.getuid() == 0:  # root's tests give the home to the unprivileged user, never root's
        assert rootless_stack.home.stat().st_uid == engine.host_uid != 0
    assert (rootless_stack.home / "run/owner-memory/admin.sock").stat().st_uid == engine.host_uid
    # Limits: rootless podman sets them where cgroups v2 lets it; on v1 it cannot (README).
    if json.loads(info.stdout)["host"]["cgroupVersion"] == "v2":
        limits = compose_limits()
        for role in SERVICES:
            memory = rootless_stack.exec(role, "cat", "/sys/fs/cgroup/memory.max").stdout
            assert int(memory) == limits[role]["memory"], role


def _cgroup_value(stack, role: str, v1: str, v2: str) -> str:
    got = stack.exec(role, "cat", v2)
    if got.returncode != 0:
        got = stack.exec(role, "cat", v1)
    assert got.returncode == 0, got.stderr
    return got.stdout.strip()


def test_rootful_containers_have_compose_limits(container_stack):
    if container_stack.engine.rootless:
        pytest.skip("the default engine here is rootless; see the rootless limits test")
    limits = compose_limits()
    for role in SERVICES:
        memory = _cgroup_value(
            container_stack,
            role,
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory.max",
        )
        pids = _cgroup_value(
            container_stack, role, "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"
        )
        assert (int(memory), int(pids)) == (limits[role]["memory"], limits[role]["pids"]), role
        assert no_swap_beyond(container_stack, role, int(memory)), role


def no_swap_beyond(stack, role: str, memory: int) -> bool:
    """The container may not swap past its memory limit: cgroups v1's memory+swap limit equals
    the memory limit, or cgroups v2's swap limit is 0."""
    v2 = stack.exec(role, "cat", "/sys/fs/cgroup/memory.swap.max")
    if v2.returncode == 0:
        return v2.stdout.strip() == "0"
    v1 = stack.exec(role, "cat", "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
    if v1.returncode != 0:
        # A kernel without swap accounting (swapaccount=0) has no such file: nothing can swap
        # past the limit through the cgroup, and there is nothing to read.
        return "No such file" in v1.stderr
    return int(v1.stdout) == memory


def test_health_checks_answer_and_a_stopped_role_is_unhealthy(container_stack):
    for role in SERVICES:
        inside = container_stack.exec(role, "python", "-m", "proto.health", role)
        assert inside.returncode == 0 and "healthy" in inside.stdout, inside
        healthy, line = check(role, container_stack.home, timeout=5)
        assert healthy, line
    memoryd = container_stack.container_id("memoryd")
    assert container_stack.engine.run("kill", "--signal", "STOP", memoryd).returncode == 0
    try:
        healthy, line = check("memoryd", container_stack.home, timeout=2)
        assert not healthy and "unhealthy" in line
        inside = container_stack.exec(
            "memoryd", "python", "-m", "proto.health", "memoryd", "--timeout", "2"
        )
        assert inside.returncode == 1 and "unhealthy" in inside.stdout, inside
    finally:
        container_stack.engine.run("kill", "--signal", "CONT", memoryd)
    assert check("memoryd", container_stack.home, timeout=5)[0]
