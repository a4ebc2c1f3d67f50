"""scripts/stack down in process mode stops a role it has no record of only when the process is
this stack's own: this clone's program for the role, run on the settings this state folder holds
for it. A process that merely carries those words among its arguments, or runs another program of
the role's name on them, is no role of the stack and keeps running, whatever down says.
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.integration.test_stack_process_converges import CopiedStack


@pytest.fixture
def stack():
    made = CopiedStack()
    try:
        yield made
    finally:
        shutil.rmtree(made.root, ignore_errors=True)


def _words_as_arguments(stack: CopiedStack, config: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import time; time.sleep(120)",
        "/opt/some/memoryd",
        "serve",
        "--config",
        config,
    ]


def _another_program_of_the_name(stack: CopiedStack, config: str) -> list[str]:
    program = stack.root / "elsewhere" / "memoryd"
    program.parent.mkdir()
    program.write_text("import time\ntime.sleep(120)\n")
    return [sys.executable, os.fspath(program), "serve", "--config", config]


@pytest.mark.parametrize("command", [_words_as_arguments, _another_program_of_the_name])
def test_down_leaves_running_a_process_that_is_no_role_of_the_stack(stack, command):
    config = stack.state / "config" / "memoryd.toml"
    config.parent.mkdir(parents=True)
    config.write_text("")
    bystander = subprocess.Popen(command(stack, os.fspath(config)), stdin=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        down = stack.run("down")
        time.sleep(0.3)
        assert bystander.poll() is None, down.stderr
        assert f"stopped memoryd (pid {bystander.pid})" not in down.stderr
    finally:
        bystander.kill()
        bystander.wait()
