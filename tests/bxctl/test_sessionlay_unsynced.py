"""A session log a restore lays whose folder's fsync fails after it was linked in (an I/O
error): it is refused as "cannot be written", so it is not left laid, nor the folder made for
it. Real folders; the fsync of one of them fails."""

import io
import os

import pytest

from bxctl import sessionlay
from bxctl.sessionarchive import hash_of
from tests.folderfsync import fail_folder_fsync

LOG = b'{"type": "user", "content": "hello"}\n'


@pytest.mark.parametrize("failing", ["the session's folder", "sessions/"])
def test_a_log_whose_folder_cannot_be_synced_is_not_left(tmp_path, monkeypatch, failing):
    sessions = tmp_path / "sessions"
    sessions.mkdir(mode=0o700)
    want = hash_of(io.BytesIO(LOG))
    session = "mm-lay00001"
    if failing == "sessions/":
        fail_folder_fsync(monkeypatch, sessions)
    else:
        real_mkdir = os.mkdir

        def mkdir(path, mode=0o777, *, dir_fd=None):
            real_mkdir(path, mode, dir_fd=dir_fd)
            fail_folder_fsync(monkeypatch, sessions / path)

        monkeypatch.setattr(sessionlay.os, "mkdir", mkdir)
    sfd = os.open(sessions, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as e:
            sessionlay._write(sfd, session, io.BytesIO(LOG), want, None)
    finally:
        os.close(sfd)
    assert e.value.strerror == "Input/output error"
    assert os.listdir(sessions) == []
