"""brokerd-shim's start names the folder it cannot make 0700 (a read-only mount: the chmod's
error carries no file name), never "None"."""

import errno
import os

import pytest

import brokerd_shim.server as server
from brokerd_shim.config import load_config
from brokerd_shim.errors import StartFailed

from .conftest import write_config


def test_a_folder_that_cannot_be_made_0700_is_named_not_none(home, monkeypatch):
    config = load_config(write_config(home))

    def read_only(folder):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))  # as os.chmod's, no filename

    monkeypatch.setattr(server, "ensure_dir", read_only)
    with pytest.raises(StartFailed) as failed:
        server.build_broker(config)
    assert str(failed.value) == f"cannot prepare {config.home}: Read-only file system"
