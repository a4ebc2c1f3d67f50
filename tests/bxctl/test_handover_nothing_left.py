"""A copy bxctl makes (an archive or export copied out to the owner's PATH, a file handed into
backups/) has no name until it is whole: a bxctl killed part way leaves nothing beside the
owner's file, and a failed copy leaves nothing at all."""

import errno
import os
import shutil

import pytest
import typer

from bxctl import handover


def _entries(folder):
    return sorted(p.name for p in folder.iterdir())


def test_while_the_copy_is_written_nothing_stands_beside_it(tmp_path, monkeypatch):
    source = tmp_path / "archive.tar.gz"
    source.write_bytes(os.urandom(3 << 20))
    out = tmp_path / "out"
    out.mkdir()
    seen = []
    real = shutil.copyfileobj

    def watching(src, dst, length=0):
        seen.append(_entries(out))  # what a kill now would leave
        return real(src, dst, length)

    monkeypatch.setattr(handover.shutil, "copyfileobj", watching)
    handover.copy_new(source, out / "copy.tar.gz")
    assert seen == [[]]
    assert _entries(out) == ["copy.tar.gz"]
    assert (out / "copy.tar.gz").read_bytes() == source.read_bytes()
    assert (out / "copy.tar.gz").stat().st_mode & 0o777 == 0o600


def test_a_copy_that_fails_part_way_leaves_nothing(tmp_path, monkeypatch):
    source = tmp_path / "archive.tar.gz"
    source.write_bytes(b"x" * 1000)
    out = tmp_path / "out"
    out.mkdir()

    def full(src, dst, length=0):
        dst.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(handover.shutil, "copyfileobj", full)
    with pytest.raises(typer.Exit):
        handover.copy_new(source, out / "copy.tar.gz")
    assert _entries(out) == []


def test_where_files_without_a_name_cannot_be_made_a_named_one_is_used(tmp_path, monkeypatch):
    source = tmp_path / "archive.tar.gz"
    source.write_bytes(b"y" * 1000)
    out = tmp_path / "out"
    out.mkdir()
    real_open = os.open

    def no_tmpfile(path, flags, *args, **kwargs):
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(handover.os, "open", no_tmpfile)
    handover.copy_new(source, out / "copy.tar.gz")
    assert _entries(out) == ["copy.tar.gz"]
    assert (out / "copy.tar.gz").read_bytes() == source.read_bytes()
