"""scripts/stack keeps one home's containers from another home's commands: the project name
(BOXMAKER_PROJECT, default boxmaker) is the same in every clone, so a down or up run for another
home must neither stop nor recreate them, and says in one line which home they serve and how to
give this one a project of its own; a process-mode up on the home they serve is refused in one
line naming them (their memoryd holds only index/memoryd.lock on the host). The containers'
home is read from their mounts, which containers made by any earlier scripts/stack have: the
owner's own up still converges, recreating nothing. On temporary homes, settings, state, project
and image tag, so an owner's stack is untouched.
"""

import os
import secrets
import shutil
import subprocess

import pytest

from tests.integration.stack import IMAGE, short_temp_home
from tests.integration.test_stack_container_health import STACK, Stack, podman

ROLES = ("memoryd", "brokerd-shim", "loopd-shim")


def ids(stack: Stack) -> list[str]:
    out = podman("inspect", "--format", "{{.Id}} {{.State.Status}}", *map(stack.container, ROLES))
    return out.stdout.split()


@pytest.mark.container
def test_another_homes_commands_leave_the_containers_of_a_home_alone(container_engine):
    if container_engine.rootless and os.getuid() == 0:
        pytest.fail("as root, scripts/stack runs rootful podman")
    root = short_temp_home("bx-homes-")
    project = f"bxhomes{secrets.token_hex(3)}"
    image = f"localhost/bxtest-{project}:dev"
    subprocess.run(["podman", "tag", IMAGE, image], check=True, timeout=60)
    a = Stack(root / "a", project, image)
    b = Stack(root / "b", project, image)
    try:
        up = a.run("up")
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-3000:]
        running = ids(a)
        assert running.count("running") == 3, running

        # Process mode from another state folder on a's home: refused, naming the containers.
        side = {**a.env, "BOXMAKER_STACK": "process", "BOXMAKER_STACK_STATE": f"{root}/side"}
        done = subprocess.run(
            [STACK, "up"],
            env=side,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 1, done.stderr[-2000:]
        said = done.stderr.splitlines()[-1]
        names = ", ".join(map(a.container, ROLES))
        assert said.startswith(
            f"error: a stack in containers already serves {a.home}: {names} (project {project})"
        ), said
        assert f"BOXMAKER_PROJECT={project} scripts/stack down" in said, said
        assert "The stack is up" not in done.stdout

        # Another home's down (its state says process mode) and up (containers): refused.
        other = (
            f"the containers of project {project} ({names}) serve the home {a.home}, not {b.home}"
        )
        down = b.run("down", timeout=300)
        assert down.returncode == 0, down.stderr
        assert (
            other in down.stderr and f"BOXMAKER_PROJECT={project} scripts/stack down" in down.stderr
        )
        up_b = b.run("up")
        assert up_b.returncode == 1, up_b.stderr[-2000:]
        assert up_b.stderr.splitlines()[-1].startswith(f"error: {other}"), up_b.stderr[-2000:]
        assert ids(a) == running, "a's containers were neither stopped nor recreated"

        # The owner's own up converges on them (recreating a role only for an image that a
        # change of the sources made, never for the home).
        again = a.run("up")
        assert again.returncode == 0, again.stderr[-3000:]
        assert "creating memoryd: it has no container" not in again.stderr, again.stderr
        assert "the home, the settings folder" not in again.stderr, again.stderr
        assert ids(a).count("running") == 3
    finally:
        a.run("down", timeout=300)
        for role in ROLES:
            podman("rm", "-f", "-t", "1", a.container(role))
        podman("untag", image, image)
        shutil.rmtree(root, ignore_errors=True)
