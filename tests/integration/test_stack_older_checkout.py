"""scripts/stack in process mode after an older checkout ran the stack from the same state folder.

A scripts/stack from before the start records rewrites ROLE.pid when it starts a role and knows
nothing of ROLE.started, so the record of the process it replaced stays beside the new pid. Back
on this checkout, the roles that older stack started run `ROLE serve --config` on this state's
settings: they are the stack's own, so `status` shows them (out of date), `up` restarts them
saying why, and `down` stops them; a record is only ever trusted for the pid it was kept for.
"""

import os
import shutil
import signal
import subprocess
import time

import pytest

from tests.integration.stack import SERVICES
from tests.integration.test_stack_owner_day import VENV, OwnerStack, _alive

NO_RECORD = (
    "it was started by an earlier scripts/stack, which kept no record of its settings and code"
)


STARTED: list[subprocess.Popen] = []


@pytest.fixture
def owner():
    made = OwnerStack()
    try:
        yield made
    finally:
        made.run("down")
        while STARTED:  # what down may have left of the roles this test started itself
            role = STARTED.pop()
            role.kill()
            role.wait()
        shutil.rmtree(made.root, ignore_errors=True)


def _older_stack_restarts(owner: OwnerStack) -> dict[str, int]:
    """What an older scripts/stack's `down` then `up` does: stop each role and remove its pid
    file (not its record, which it does not know), then start the role as it always did and
    write the new pid; the record of the process it stopped stays."""
    for name in SERVICES:
        pid = owner.pid(name)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        (owner.state / f"{name}.pid").unlink()
    pids = {}
    for name in SERVICES:
        conf = owner.state / "config" / f"{name.removesuffix('-shim')}.toml"
        with (owner.state / f"{name}.log").open("ab") as log:
            role = subprocess.Popen(
                [VENV / "bin" / name, "serve", "--config", conf],
                env={**owner.env, "BOXMAKER_LOG_FILE": os.fspath(owner.state / f"{name}.log")},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        STARTED.append(role)
        (owner.state / f"{name}.pid").write_text(f"{role.pid}\n")
        pids[name] = role.pid
    return pids


@pytest.mark.parametrize("record", ["with its pid", "from before records named the pid"])
def test_roles_an_older_checkout_started_are_upgraded_and_stopped(owner, record):
    assert owner.run("up").returncode == 0
    if record != "with its pid":  # a record kept by a scripts/stack that wrote no pid into it
        for name in SERVICES:
            started = owner.state / f"{name}.started"
            lines = started.read_text().splitlines()
            started.write_text("".join(f"{x}\n" for x in lines if not x.startswith("pid ")))
            os.utime(started, (time.time() - 60, time.time() - 60))
    older = _older_stack_restarts(owner)

    status = owner.run("status")
    for name in SERVICES:
        assert f"{name}: pid {older[name]}, runs an unknown version" in status.stdout, status.stdout
        assert f"{name}: out of date: {NO_RECORD} (scripts/stack up restarts it)" in status.stdout
    assert "another program now" not in status.stdout

    up = owner.run("up")
    assert up.returncode == 0, up.stderr[-2000:]
    for name in SERVICES:
        assert f"{name}: {NO_RECORD}: restarting" in up.stderr, up.stderr
        assert owner.pid(name) != older[name] and not _alive(older[name])
    assert owner.bxctl("memory", "log").returncode == 0

    # Once more, and down stops what the older stack started.
    older = _older_stack_restarts(owner)
    down = owner.run("down")
    assert down.returncode == 0, down.stderr
    for name in SERVICES:
        assert f"stopped {name} (pid {older[name]})" in down.stderr.splitlines(), down.stderr
        assert not _alive(older[name])
