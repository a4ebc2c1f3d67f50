"""proto.files: modes, atomic replacement, no overwrite, fsync'd appends."""

import os
import stat

import pytest

from proto.files import append_line, atomic_write, create_if_missing, ensure_dir


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_ensure_dir_makes_every_created_parent_0700(tmp_path):
    os.umask(0o022)
    ensure_dir(tmp_path / "a" / "b" / "c")
    for folder in ("a", "a/b", "a/b/c"):
        assert mode(tmp_path / folder) == 0o700


def test_atomic_write_replaces_whole_and_leaves_no_temp(tmp_path):
    path = tmp_path / "memory.md"
    path.write_text("old")
    atomic_write(path, b"new")
    assert path.read_bytes() == b"new" and mode(path) == 0o600
    assert os.listdir(tmp_path) == ["memory.md"]


def test_atomic_write_failure_keeps_old(tmp_path, monkeypatch):
    path = tmp_path / "memory.md"
    path.write_text("old")

    def boom(*_, **__):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write(path, b"new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_create_if_missing_never_overwrites(tmp_path):
    path = tmp_path / "soul.md"
    assert create_if_missing(path, b"starter") is True
    assert create_if_missing(path, b"other") is False
    assert path.read_bytes() == b"starter" and mode(path) == 0o600


def test_append_line(tmp_path):
    path = tmp_path / "edits.jsonl"
    append_line(path, '{"a":1}')
    append_line(path, '{"b":2}')
    assert path.read_text() == '{"a":1}\n{"b":2}\n' and mode(path) == 0o600
