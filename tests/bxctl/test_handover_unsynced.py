"""A copy bxctl makes whose folder's fsync fails after the copy was given its name (an I/O
error): the answer "nothing was left" is true, with a file without a name or a named temporary
one."""

import errno
import os

import pytest
import typer

from bxctl import handover
from tests.folderfsync import fail_folder_fsync


@pytest.mark.parametrize("tmpfile", [True, False], ids=["O_TMPFILE", "named"])
def test_a_copy_whose_folder_cannot_be_synced_leaves_nothing(
    tmp_path, monkeypatch, capsys, tmpfile
):
    source = tmp_path / "archive.tar.gz"
    source.write_bytes(b"z" * 1000)
    out = tmp_path / "out"
    out.mkdir()
    if not tmpfile:
        real_open = os.open

        def no_tmpfile(path, flags, *a, **k):
            if flags & os.O_TMPFILE == os.O_TMPFILE:
                raise OSError(errno.EOPNOTSUPP, "Operation not supported")
            return real_open(path, flags, *a, **k)

        monkeypatch.setattr(handover.os, "open", no_tmpfile)
    fail_folder_fsync(monkeypatch, out)
    with pytest.raises(typer.Exit):
        handover.copy_new(source, out / "copy.tar.gz")
    assert "Input/output error; nothing was left" in capsys.readouterr().err.replace("\n", " ")
    assert sorted(os.listdir(out)) == []
