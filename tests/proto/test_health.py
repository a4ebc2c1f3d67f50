"""proto.health against real roles: healthy when the role answers, unhealthy when it is stopped
(SIGSTOP) or gone, within the deadline."""

import os
import signal
import subprocess
import sys
import time

from proto.health import check
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
