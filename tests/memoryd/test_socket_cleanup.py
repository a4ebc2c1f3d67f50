"""What memoryd removes when it stops, or fails to start: only the sockets it bound itself, never
a file, a folder or another process's socket found at a configured path, nor anything reached
through a folder swapped for a symbolic link; and a reindex's build in flight does not hold up
the stop."""

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from memoryd.config import load
from memoryd.errors import StartFailed
from memoryd.index import rebuild
from memoryd.server import prepare, run
from proto.client import RemoteError, request
from proto.messages import Reindex
from tests.memoryd.test_scheduling import _log
from tests.memoryd.test_service import SOUL, Running


def _config(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{tmp_path / "home"}"\n{extra}')
    return config


def _start(config: Path) -> None:
    """memoryd's start, in this process, up to the StartFailed it must end with."""
    cfg = load(config)
    service = prepare(cfg)
    with pytest.raises(StartFailed) as failed:
        asyncio.run(run(cfg, service))
    assert "\n" not in str(failed.value)
    # The sockets it did bind before the refused one are its own: they go.
    assert not cfg.loop_socket.exists() and not cfg.broker_socket.exists()


def _regular(path: Path) -> None:
    path.write_text("the owner's notes\n")


def _folder(path: Path) -> None:
    path.mkdir()
    (path / "inside.txt").write_text("kept\n")


@pytest.mark.parametrize("make", [_regular, _folder], ids=["a file", "a folder"])
def test_a_path_that_is_not_a_socket_is_refused_and_kept(tmp_path, make):
    target = tmp_path / "taken"
    make(target)
    before = sorted(p.name for p in tmp_path.rglob("*") if p.is_relative_to(target)) or None
    _start(_config(tmp_path, f'[sockets]\nadmin = "{target}"\n'))
    assert target.exists()
    after = sorted(p.name for p in tmp_path.rglob("*") if p.is_relative_to(target)) or None
    assert after == before


def test_the_settings_file_named_as_a_socket_is_kept(tmp_path):
    config = _config(tmp_path, '[sockets]\nadmin = "memoryd.toml"\n')
    text = config.read_text()
    _start(config)
    assert config.read_text() == text


def test_another_live_process_s_socket_is_kept(tmp_path):
    other = tmp_path / "other.sock"
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listening.bind(str(other))
        listening.listen()
        _start(_config(tmp_path, f'[sockets]\nadmin = "{other}"\n'))
        assert other.is_socket()
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with probe:
            probe.connect(str(other))  # still the other process's, still served
    finally:
        listening.close()


def test_nothing_is_removed_through_a_linked_socket_folder_at_the_start(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "admin.sock").write_text("kept\n")
    run_dir = tmp_path / "home/run"
    run_dir.mkdir(parents=True)
    (run_dir / "owner-memory").symlink_to(outside)
    _start(_config(tmp_path))
    assert (outside / "admin.sock").read_text() == "kept\n"


def test_nothing_is_removed_through_a_socket_folder_swapped_for_a_link_at_the_stop(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "admin.sock").write_text("kept\n")
    running = Running(tmp_path / "home", _config(tmp_path))
    folder = running.cfg.admin_socket.parent
    moved = tmp_path / "moved"
    try:
        assert running.cfg.admin_socket.is_socket()
        folder.rename(moved)
        folder.symlink_to(outside)
    finally:
        running.stop()
    assert (outside / "admin.sock").read_text() == "kept\n"
    assert not running.cfg.loop_socket.exists() and not running.cfg.broker_socket.exists()
    assert (moved / "admin.sock").is_socket()  # not found where it was bound: left, logged


def test_a_socket_replaced_while_running_is_kept_at_the_stop(tmp_path):
    running = Running(tmp_path / "home", _config(tmp_path))
    path = running.cfg.admin_socket
    try:
        path.unlink()
        path.write_text("someone else's\n")
    finally:
        running.stop()
    assert path.read_text() == "someone else's\n"
    assert not running.cfg.loop_socket.exists()


def test_a_stop_ends_a_reindex_in_flight_at_once_and_keeps_the_index(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel nests on the roof"])
    started = threading.Event()
    real_popen = rebuild.subprocess.Popen

    def popen(command, **kw):  # a build that would take a minute
        child = real_popen([command[0], "-c", "import time; time.sleep(60)"], **kw)
        started.set()
        return child

    monkeypatch.setattr(rebuild, "arguments", lambda index: [])
    monkeypatch.setattr(rebuild.subprocess, "Popen", popen)
    running = Running(home, _config(tmp_path))
    index_file = home / "index/memory.sqlite3"
    answers: list[BaseException] = []

    def reindex() -> None:
        try:
            request(running.cfg.admin_socket, Reindex(), timeout=30)
        except RemoteError as e:
            answers.append(e)

    asker = threading.Thread(target=reindex)
    asker.start()
    try:
        assert started.wait(10)
        began = time.monotonic()
    finally:
        running.stop()
    took = time.monotonic() - began
    asker.join(10)
    assert not running.thread.is_alive() and took < 5
    assert [str(e) for e in answers] == [rebuild.STOPPED]
    assert index_file.is_file()
    assert sorted(os.listdir(home / "index")) == ["memory.sqlite3", "memoryd.lock"]
