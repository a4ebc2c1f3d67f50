"""loopd-shim serve as a real process, driven by the loopd-shim command, beside the fakes.

It is killed with SIGKILL part way through a session, with half a record left in the log, and
started again: the saved baseline is replayed, not rebuilt, and the log goes on cleanly.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from proto.records import read_records
from tests.rawsocket import answers

BIN = Path(sys.executable).parent / "loopd-shim"


def driver(stack, *args):
    env = dict(os.environ, BOXMAKER_CONTROL_SOCKET=str(stack.config.control_socket))
    return subprocess.run(
        [str(BIN), *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def start_server(config_path: Path, socket: Path) -> subprocess.Popen:
    server = subprocess.Popen(
        [str(BIN), "serve", "--config", str(config_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 15
    while not answers(socket):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise AssertionError(f"loopd-shim serve did not start: {server.communicate()[1]}")
        time.sleep(0.02)
    return server


def test_serve_as_a_process_killed_and_restarted(fakes, tmp_path):
    config = fakes.config
    config_path = tmp_path / "loopd.toml"
    config_path.write_text(
        f'[paths]\nhome = "{config.home}"\n[prompt]\nsystem = "{config.system_prompt}"\n'
    )
    server = start_server(config_path, config.control_socket)
    try:
        assert driver(fakes, "start", "--session", "s-proc").stdout == "s-proc\n"
        assert driver(fakes, "say", "s-proc", "hello").returncode == 0
        answered = driver(fakes, "answer", "s-proc", "--call", 'recall {"query": "launch"}')
        assert answered.returncode == 0 and ": ok · private · trusted" in answered.stdout
        assert fakes.memoryd.updated == []
    finally:
        server.kill()
        server.wait(5)

    log = config.sessions / "s-proc" / "0.jsonl"
    baseline = (config.sessions / "s-proc" / "0.baseline.json").read_bytes()
    with open(log, "ab") as f:
        f.write(b'{"type":"assistant","time":"2026-09-2')
    fakes.memoryd.block = "# soul.md\nwritten after the session started"

    server = start_server(config_path, config.control_socket)
    try:
        finished = driver(fakes, "answer", "s-proc", "Nothing about the launch yet.")
        assert finished.returncode == 0, finished.stderr
        refused = driver(fakes, "start", "--session", "s-proc")
        assert refused.returncode == 1 and "session s-proc exists" in refused.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=5)
    assert server.returncode == 0
    assert "half-written" in stderr and "s-proc" in stderr
    assert not config.control_socket.exists()

    assert (config.sessions / "s-proc" / "0.baseline.json").read_bytes() == baseline
    assert "written after" not in json.loads(baseline)["system"]
    records = [line.record for line in read_records(log)]
    assert [r.type for r in records] == ["user", "assistant", "tool_result", "assistant"]
    assert records[-1].content == "Nothing about the launch yet."
    assert fakes.memoryd.updated == ["s-proc"]


def test_a_second_loopd_shim_on_one_home_or_one_socket_is_refused(fakes, tmp_path):
    config = fakes.config
    config_path = tmp_path / "loopd.toml"
    config_path.write_text(
        f'[paths]\nhome = "{config.home}"\n[prompt]\nsystem = "{config.system_prompt}"\n'
    )
    server = start_server(config_path, config.control_socket)
    before = config.control_socket.stat().st_ino
    try:
        # The same home: refused by its lock before it serves anything.
        second = subprocess.run(
            [str(BIN), "serve", "--config", str(config_path)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert second.returncode == 2
        assert second.stderr.splitlines() == [
            "loopd-shim: another loopd-shim is running (it holds the lock on"
            f" {config.home / 'loopd-shim.lock'}); stop it first"
        ]
        # Another home serving the same control socket: refused by the socket's probe.
        other = tmp_path / "other.toml"
        other.write_text(
            f'[paths]\nhome = "{tmp_path / "other"}"\n[prompt]\nsystem = "{config.system_prompt}"'
            f'\n[control]\nsocket = "{config.control_socket}"\n'
        )
        third = subprocess.run(
            [str(BIN), "serve", "--config", str(other)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert third.returncode == 2
        assert "is served by another live process" in third.stderr
        assert len(third.stderr.splitlines()) == 1
        assert config.control_socket.stat().st_ino == before
        assert driver(fakes, "start", "--session", "s-one").stdout == "s-one\n"
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=5)
    assert server.returncode == 0
    # The lock goes with the process: the next start takes it.
    server = start_server(config_path, config.control_socket)
    server.send_signal(signal.SIGTERM)
    server.communicate(timeout=5)
    assert server.returncode == 0
