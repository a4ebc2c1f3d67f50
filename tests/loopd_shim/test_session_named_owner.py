"""loopd-shim refuses to start a session named "owner", the name memoryd journals the owner's own
memory edits under: a session's write under it would read as the owner's in bxctl memory log.
Over the real control socket, and through the loopd-shim command as the driver runs it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopd_shim.service import RESERVED
from proto.client import RemoteError
from proto.messages import SessionStart, SessionStarted

BIN = Path(sys.executable).parent / "loopd-shim"


def test_a_session_named_owner_is_not_started(stack):
    with pytest.raises(RemoteError) as refused:
        stack.ask(SessionStart(session="owner"))

    assert str(refused.value) == RESERVED.format(session="owner")
    assert not (stack.config.sessions / "owner").exists()
    # Names that only look like it start as any.
    for near in ("Owner", "owner-1"):
        assert isinstance(stack.ask(SessionStart(session=near)), SessionStarted)


def test_the_driver_says_why_in_one_line(stack):
    env = dict(os.environ, BOXMAKER_CONTROL_SOCKET=str(stack.config.control_socket))
    done = subprocess.run(
        [str(BIN), "start", "--session", "owner"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"loopd-shim: {RESERVED.format(session='owner')}\n"
    assert not (stack.config.sessions / "owner").exists()
