"""proto.files when the folder's fsync fails after the rename or link (an I/O error): the call
raises and leaves the file as it was, so a caller's "not written" is true. An old file keeps
its old bytes, a new one is not left, and no temporary file stays."""

import errno
import os

import pytest

from proto.files import append_bytes, append_line, atomic_write, create_if_missing
from tests.folderfsync import fail_folder_fsync


def test_atomic_write_over_a_file_puts_its_old_bytes_back(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    atomic_write(path, b"old")
    fail_folder_fsync(monkeypatch, tmp_path)
    with pytest.raises(OSError) as e:
        atomic_write(path, b"new")
    assert e.value.errno == errno.EIO
    assert path.read_bytes() == b"old"
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.listdir(tmp_path) == ["state.json"]


def test_atomic_write_of_a_new_file_leaves_none(tmp_path, monkeypatch):
    fail_folder_fsync(monkeypatch, tmp_path)
    with pytest.raises(OSError):
        atomic_write(tmp_path / "state.json", b"new")
    assert os.listdir(tmp_path) == []


def test_atomic_write_asked_to_keep_an_unsynced_file_keeps_it(tmp_path, monkeypatch):
    path = tmp_path / "memory.md"
    atomic_write(path, b"written")
    fail_folder_fsync(monkeypatch, tmp_path)
    with pytest.raises(OSError):
        atomic_write(path, b"put back", undo_unsynced=False)
    assert path.read_bytes() == b"put back"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_atomic_write_takes_back_only_its_own_file(tmp_path, monkeypatch):
    """A file another writer renamed in after this one's rename is not replaced by the old."""
    path = tmp_path / "state.json"
    atomic_write(path, b"old")
    real = os.fsync

    def fsync(fd):
        if os.path.samestat(os.fstat(fd), os.stat(tmp_path)):
            (tmp_path / "other").write_bytes(b"theirs")
            os.replace(tmp_path / "other", path)
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError):
        atomic_write(path, b"new")
    assert path.read_bytes() == b"theirs"


def test_create_if_missing_leaves_no_file(tmp_path, monkeypatch):
    fail_folder_fsync(monkeypatch, tmp_path)
    with pytest.raises(OSError) as e:
        create_if_missing(tmp_path / "export.jsonl", b"data")
    assert e.value.errno == errno.EIO
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("append", [append_bytes, append_line])
def test_an_append_that_creates_its_file_leaves_none(tmp_path, monkeypatch, append):
    fail_folder_fsync(monkeypatch, tmp_path)
    with pytest.raises(OSError):
        append(tmp_path / "2026-12.jsonl", "line" if append is append_line else b"line\n")
    assert os.listdir(tmp_path) == []


def test_an_append_to_a_file_there_needs_no_folder_fsync(tmp_path, monkeypatch):
    path = tmp_path / "2026-12.jsonl"
    append_line(path, "one")
    fail_folder_fsync(monkeypatch, tmp_path)
    append_line(path, "two")
    assert path.read_bytes() == b"one\ntwo\n"
