"""A folder loopd-shim cannot use is named in one line: at start, a home or sessions folder that
cannot be made 0700 (a read-only mount: the chmod's error carries no file name) is said by its
path, never "None"; while serving, a sessions folder it may not search (its x bit gone, another
owner) refuses the request in one line that says what mends it, never "internal error" with a
traceback in the log."""

import errno
import logging
import os

import pytest

import loopd_shim.server as server
from loopd_shim.errors import StartFailed
from loopd_shim.sessions import SessionStore
from proto.client import RemoteError
from proto.messages import SessionStart
from tests.loopd_shim.conftest import make_config


def test_a_folder_that_cannot_be_made_0700_is_named_not_none(home, monkeypatch):
    def read_only(folder):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))  # as os.chmod's, no filename

    monkeypatch.setattr(server, "ensure_dir", read_only)
    with pytest.raises(StartFailed) as failed:
        server.build_service(make_config(home))
    assert str(failed.value) == f"cannot prepare {home}: Read-only file system"


def test_a_sessions_folder_it_may_not_search_is_one_line_not_internal_error(
    stack, monkeypatch, caplog
):
    sessions = stack.config.sessions

    class Denied(type(sessions)):
        # a folder that may not be searched refuses every look at what is in it
        def exists(self, **_):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

        def lstat(self):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr(SessionStore, "folder", lambda store, session: Denied(sessions, session))
    with caplog.at_level(logging.ERROR), pytest.raises(RemoteError) as refused:
        stack.ask(SessionStart(session="zz1"))
    said = str(refused.value)
    assert "internal error" not in said
    assert said == (
        f"loopd-shim cannot use {sessions / 'zz1'}: Permission denied; nothing was done (the"
        f" sessions folder {sessions} must be loopd-shim's own, 0700: scripts/stack up gives it"
        " back)"
    )
    assert "Traceback" not in caplog.text
