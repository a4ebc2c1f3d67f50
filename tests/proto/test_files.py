"""proto.files: modes, atomic replacement, no overwrite, fsync'd appends."""

import json
import os
import resource
import signal
import socket
import stat

import pytest

from proto.files import (
    NotRegular,
    append_bytes,
    append_line,
    atomic_write,
    create_if_missing,
    ensure_dir,
    read_file,
)


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


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"", b"x\n"),
        (b"a\n", b"a\nx\n"),
        # the last line lost its newline (an editor, a torn append): x is not glued onto it
        (b"a", b"a\nx\n"),
        (b"a\nb", b"a\nb\nx\n"),
        (b'{"a":1}\n{"b":', b'{"a":1}\n{"b":\nx\n'),
    ],
)
def test_append_line_lands_on_a_line_of_its_own(tmp_path, before, after):
    path = tmp_path / "edits.jsonl"
    path.write_bytes(before)
    append_line(path, "x")
    assert path.read_bytes() == after


# --- never through a symbolic link, never a FIFO ----------------------------------


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    os.chmod(folder, 0o755)
    (folder / "target").write_bytes(b"outside\n")
    return folder


def test_append_refuses_a_link_at_the_file(tmp_path, outside):
    link = tmp_path / "journal.jsonl"
    link.symlink_to(outside / "target")
    with pytest.raises(NotRegular, match="journal.jsonl is a symbolic link"):
        append_line(link, "x")
    assert (outside / "target").read_bytes() == b"outside\n"


def test_append_refuses_a_link_at_the_folder(tmp_path, outside):
    (tmp_path / "edits").symlink_to(outside)
    with pytest.raises(NotRegular, match="edits is a symbolic link"):
        append_line(tmp_path / "edits" / "2026-09.jsonl", "x")
    assert sorted(os.listdir(outside)) == ["target"]


def test_atomic_write_refuses_a_link_and_leaves_it(tmp_path, outside):
    link = tmp_path / "memory.md"
    link.symlink_to(outside / "target")
    with pytest.raises(NotRegular):
        atomic_write(link, b"new")
    assert link.is_symlink() and (outside / "target").read_bytes() == b"outside\n"
    (tmp_path / "memory").symlink_to(outside)
    with pytest.raises(NotRegular):
        atomic_write(tmp_path / "memory" / "user.md", b"new")
    assert sorted(os.listdir(outside)) == ["target"]


def test_read_refuses_a_link_and_a_fifo_without_waiting(tmp_path, outside):
    link = tmp_path / "notes.md"
    link.symlink_to(outside / "target")
    with pytest.raises(NotRegular, match="symbolic link"):
        read_file(link)
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="FIFO"):
        read_file(fifo)  # would block forever if opened without O_NONBLOCK
    with pytest.raises(NotRegular, match="FIFO"):  # no reader: named, not ENXIO
        append_line(fifo, "x")


def test_opening_a_socket_or_a_readerless_fifo_to_write_names_what_is_there(tmp_path):
    """Opened to write, a FIFO with no reader fails with ENXIO and a socket with ENXIO or
    EOPNOTSUPP: the callers that skip a path leading to no file (the recall log) must see
    NotRegular, in words that say what stands there."""
    fifo = tmp_path / "2026-09.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="is a FIFO, not a regular file"):
        append_line(fifo, "x")
    sock_path = tmp_path / "s.jsonl"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(NotRegular, match="is a socket, not a regular file"):
            append_line(sock_path, "x")


def test_ensure_dir_refuses_a_link_and_never_chmods_its_target(tmp_path, outside):
    (tmp_path / "edits").symlink_to(outside)
    with pytest.raises(NotRegular, match="edits is a symbolic link"):
        ensure_dir(tmp_path / "edits")
    assert mode(outside) == 0o755
    (tmp_path / "plain").write_text("x")
    with pytest.raises(NotRegular, match="not a folder"):
        ensure_dir(tmp_path / "plain")


def test_create_if_missing_leaves_a_dangling_link(tmp_path, outside):
    link = tmp_path / "soul.md"
    link.symlink_to(outside / "missing")
    assert create_if_missing(link, b"starter") is False
    assert not (outside / "missing").exists()


@pytest.fixture
def file_size_limit():
    """limit(path, extra): no file of this process may grow past path's size plus extra (a
    full disk, played by RLIMIT_FSIZE with SIGXFSZ ignored: the write is cut short, then
    fails)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def limit(path, extra: int) -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + extra, hard))

    yield limit
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    signal.signal(signal.SIGXFSZ, old_handler)


@pytest.mark.parametrize("append", ["line", "bytes"])
@pytest.mark.parametrize("room", [0, 1, 40])
def test_an_append_cut_short_by_a_full_disk_leaves_the_file_as_it_was(
    tmp_path, file_size_limit, append, room
):
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"first": 1}\n')
    before = path.read_bytes()
    file_size_limit(path, room)
    with pytest.raises(OSError):
        if append == "line":
            append_line(path, json.dumps({"text": "x" * 200}))
        else:
            append_bytes(path, b'{"text": "' + b"y" * 200 + b'"}\n')
    assert path.read_bytes() == before
