"""memoryd as a subprocess: it starts, serves, stops cleanly on SIGTERM, and a start that cannot
succeed is one line naming the cause and memoryd-start-failed."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from memoryd.config import PACKAGED_SOUL
from proto.client import request
from proto.messages import MemoryBlock
from tests.memoryd_process import MemorydProcess
from tests.rawsocket import answers


def test_serves_and_stops_cleanly_on_sigterm(tmp_path):
    memoryd = MemorydProcess(tmp_path).start()
    try:
        assert request(memoryd.loop_socket, MemoryBlock()).text.startswith("# soul.md")
    finally:
        code = memoryd.stop()
    assert code == 0
    assert not memoryd.admin_socket.exists()


def test_starts_with_only_boxmaker_home_and_the_packaged_starter(tmp_path):
    """No config file at all: soul.md is copied from the starter shipped with the package."""
    home = tmp_path / "home"
    log = open(tmp_path / "memoryd.log", "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve"],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env={**os.environ, "BOXMAKER_HOME": str(home)},
        cwd=tmp_path,
    )
    try:
        socket_path = home / "run/loop-memory/memory.sock"
        deadline = time.monotonic() + 20
        while not answers(socket_path):
            assert proc.poll() is None, (tmp_path / "memoryd.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "memoryd.log").read_text()
            time.sleep(0.05)
        block = request(socket_path, MemoryBlock()).text
        assert block.startswith("# soul.md\n" + PACKAGED_SOUL.read_text().splitlines()[0])
        assert (home / "memory/soul.md").read_bytes() == PACKAGED_SOUL.read_bytes()
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


def test_restart_keeps_files_and_removes_stale_sockets(tmp_path):
    memoryd = MemorydProcess(tmp_path).start()
    (memoryd.home / "memory" / "soul.md").write_text("Edited by the owner.\n")
    memoryd.kill()  # leaves stale sockets behind
    assert memoryd.admin_socket.exists()
    memoryd.start()
    try:
        assert "Edited by the owner." in request(memoryd.loop_socket, MemoryBlock()).text
    finally:
        memoryd.stop()


@pytest.mark.parametrize(
    "config,cause",
    [
        ("[memory]\nreveiw = true\n", "reveiw"),
        ("[index]\nmax_class = 'top'\n", "max_class"),
    ],
)
def test_start_failure_is_one_line(tmp_path, config, cause):
    memoryd = MemorydProcess(tmp_path, config)
    result = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(memoryd.config)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ},
    )
    assert result.returncode == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("memoryd: cannot start")]
    assert len(lines) == 1
    assert cause in lines[0] and "(runbook: memoryd-start-failed)" in lines[0]


def test_start_failure_when_home_unwritable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    memoryd = MemorydProcess(tmp_path)
    memoryd.config.write_text(f'[paths]\nhome = "{blocker}/home"\n')
    result = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(memoryd.config)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "memoryd-start-failed" in result.stderr


def _serve(config) -> subprocess.CompletedProcess:
    """`memoryd serve` started by hand on config, as an owner would, to its end."""
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_second_memoryd_on_the_same_home_is_refused(tmp_path):
    first = MemorydProcess(tmp_path).start()
    try:
        result = _serve(first.config)
        assert result.returncode == 2
        assert "another memoryd is running" in result.stderr
        assert "memoryd-start-failed" in result.stderr
        assert request(first.loop_socket, MemoryBlock()).text.startswith("# soul.md")
    finally:
        assert first.stop() == 0


def test_a_second_memoryd_is_refused_after_the_owner_removed_index(tmp_path):
    """index/ may be removed to free space; the lock on the home folder still keeps a second
    memoryd from running its start-up recovery on the first one's files."""
    first = MemorydProcess(tmp_path).start()
    try:
        shutil.rmtree(first.home / "index")
        in_flight = first.home / "memory" / ".memory.md.in-flight.tmp"
        in_flight.write_text("a write the first memoryd has not renamed yet\n")
        result = _serve(first.config)
        assert result.returncode == 2
        assert "another memoryd is running" in result.stderr
        assert in_flight.exists()  # the second did not clean up the first one's work
        assert not (first.home / "index").exists()
        assert request(first.loop_socket, MemoryBlock()).text.startswith("# soul.md")
        in_flight.unlink()
    finally:
        assert first.stop() == 0


def test_temporary_files_left_by_a_crash_are_removed_at_start(tmp_path):
    memoryd = MemorydProcess(tmp_path).start()
    memoryd.kill()
    # notes.md's: a leftover beside memory.md or user.md holding what no other place holds is
    # kept as an owner's save (test_exchange_leftover.py)
    leftover = memoryd.home / "memory" / ".notes.md.k2j3h4.tmp"
    leftover.write_text("half a file")
    memoryd.start()
    try:
        assert not leftover.exists()
        assert "removed a temporary file left by a crash" in memoryd.log.read_text()
    finally:
        memoryd.stop()
