"""proto.health against real roles: healthy when the role answers, unhealthy when it is stopped
(SIGSTOP) or gone, within the deadline."""

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time

from proto.health import check
from proto.messages import Ok
from proto.paths import LOOP_CONTROL_SOCKET, LOOP_MEMORY_SOCKET, under
from proto.server import serve_unix
from tests.memoryd_process import MemorydProcess


def test_memoryd_is_healthy_then_unhealthy_when_stopped_or_gone(tmp_path):
    memoryd = MemorydProcess(tmp_path).start()
    try:
        healthy, line = check("memoryd", memoryd.home, timeout=2)
        assert healthy, line
        memoryd.proc.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        healthy, line = check("memoryd", memoryd.home, timeout=1)
        assert not healthy and "unhealthy" in line
        assert time.monotonic() - started < 3
        memoryd.proc.send_signal(signal.SIGCONT)
        assert check("memoryd", memoryd.home, timeout=2)[0]
    finally:
        memoryd.proc.send_signal(signal.SIGCONT)
        memoryd.stop()
    healthy, line = check("memoryd", memoryd.home, timeout=1)
    assert not healthy and "nothing answers" in line


def test_the_command_exits_by_health(tmp_path):
    memoryd = MemorydProcess(tmp_path).start()
    env = {**os.environ, "BOXMAKER_HOME": str(memoryd.home)}
    try:
        ok = subprocess.run(
            [sys.executable, "-m", "proto.health", "memoryd"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert ok.returncode == 0 and ok.stdout.startswith("memoryd: healthy"), ok
        shim = subprocess.run(
            [sys.executable, "-m", "proto.health", "loopd-shim"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert shim.returncode == 1 and "unhealthy" in shim.stdout
    finally:
        memoryd.stop()


class _Refused(Exception):
    pass


def _serve_memory_block_at(path, answer, kinds=frozenset({"memory_block"})):
    """A socket at path answering kinds with answer(); its loop runs in a thread."""
    loop = asyncio.new_event_loop()

    async def handle(message):
        return answer()

    server = loop.run_until_complete(
        serve_unix(path, handle, kinds, name="fake", answerable=(_Refused,))
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def close():
        server.close()
        await server.wait_closed()

    def stop():
        asyncio.run_coroutine_threadsafe(close(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()

    return stop


def test_a_reply_of_another_kind_is_unhealthy_a_refusal_is_an_answer_for_the_shims(tmp_path):
    stop = _serve_memory_block_at(under(tmp_path, LOOP_MEMORY_SOCKET), Ok)
    try:
        healthy, line = check("memoryd", tmp_path, timeout=2)
        assert not healthy and line.endswith("answered Ok"), line
    finally:
        stop()

    def refuse():
        raise _Refused("no block here")

    stop = _serve_memory_block_at(under(tmp_path, LOOP_CONTROL_SOCKET), refuse)
    try:
        healthy, line = check("loopd-shim", tmp_path, timeout=2)
        assert healthy and line.startswith("loopd-shim: healthy"), line
    finally:
        stop()


def test_a_shim_is_asked_a_kind_its_socket_serves_so_it_logs_no_wrong_socket_line(tmp_path, caplog):
    """The probe is a kind loopd-shim's control socket serves with a body it refuses: healthy,
    the handler never reached, and no "is it the right socket?" line in the shim's log."""
    reached: list[int] = []
    stop = _serve_memory_block_at(
        under(tmp_path, LOOP_CONTROL_SOCKET), lambda: reached.append(1), kinds={"owner_message"}
    )
    try:
        with caplog.at_level(logging.INFO):
            healthy, line = check("loopd-shim", tmp_path, timeout=2)
    finally:
        stop()
    assert healthy, line
    assert not reached
    assert not [r for r in caplog.records if "wrong-socket" in r.getMessage()]
    # nor any other line at INFO: a health check every few seconds must not fill the log
    assert not [r for r in caplog.records if r.name.startswith("proto")], caplog.text
