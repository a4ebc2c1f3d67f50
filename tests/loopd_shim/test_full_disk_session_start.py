"""A session that cannot be made (a full disk, a quota, a read-only home) is refused in one line
that says why and that nothing was started; loopd-shim goes on serving, nothing of the session is
left behind, and a start once there is room again works."""

import errno
import os

import pytest

import loopd_shim.sessions as sessions
from proto.client import RemoteError
from proto.messages import OwnerMessage, SessionStart


def _failing(code: int):
    def write(path, data):
        raise OSError(code, os.strerror(code), str(path))

    return write


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_refuses_the_start_in_one_line_and_loopd_shim_serves_on(
    stack, monkeypatch, code
):
    log = stack.config.sessions / "s-full" / "0.jsonl"
    with monkeypatch.context() as patch:
        patch.setattr(sessions, "atomic_write", _failing(code))
        with pytest.raises(RemoteError) as refused:
            stack.ask(SessionStart(session="s-full"))
    assert str(refused.value) == (
        f"the disk is full: cannot create the session log {log}; nothing was started "
        "(free some room, then start the session again)"
    )
    assert not (stack.config.sessions / "s-full").exists()
    # Room again: the same session starts, and the service answers as before.
    assert stack.ask(SessionStart(session="s-full")).session == "s-full"
    stack.ask(OwnerMessage(session="s-full", content="hello"))
    assert log.read_text().count("\n") == 1


def test_a_log_that_cannot_be_made_names_why(stack, monkeypatch):
    def create(path, data=b""):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(sessions, "create_if_missing", create)
    with pytest.raises(RemoteError) as refused:
        stack.ask(SessionStart(session="s-ro"))
    log = stack.config.sessions / "s-ro" / "0.jsonl"
    assert str(refused.value) == (
        f"cannot create the session log {log}: Read-only file system; nothing was started"
    )
    assert not (stack.config.sessions / "s-ro").exists()
