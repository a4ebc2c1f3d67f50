"""Start memoryd as a real subprocess on a temporary home, for tests that want the real thing."""

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.rawsocket import answers as _answers

SOUL = "You are a careful personal agent.\n"


class MemorydProcess:
    def __init__(self, tmp_path: Path, extra_config: str = "", nofile: int | None = None):
        self.nofile = nofile  # RLIMIT_NOFILE of the process, as `ulimit -n` would set it
        self.home = tmp_path / "home"
        (tmp_path / "soul.md").write_text(SOUL)
        self.config = tmp_path / "memoryd.toml"
        self.config.write_text(f'[paths]\nhome = "{self.home}"\n{extra_config}')
        self.admin_socket = self.home / "run/owner-memory/admin.sock"
        self.loop_socket = self.home / "run/loop-memory/memory.sock"
        self.broker_socket = self.home / "run/broker-memory/memory.sock"
        self.log = tmp_path / "memoryd.log"
        self.proc = None

    def start(self, timeout: float = 20.0, caught_up: bool = True) -> "MemorydProcess":
        """Start; return once every socket answers and (caught_up) the catch-up of the logs,
        which runs in the background once memoryd serves, is done."""
        env = {**os.environ, "BOXMAKER_HOME": str(self.home)}
        logged = self.log.stat().st_size if self.log.exists() else 0
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "serve", "--config", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "ab"),  # noqa: SIM115
            env=env,
            preexec_fn=None if self.nofile is None else self._limit_descriptors,
        )
        deadline = time.monotonic() + timeout
        while not all(
            _answers(p) for p in (self.admin_socket, self.loop_socket, self.broker_socket)
        ) or (caught_up and not self._caught_up_since(logged)):
            if self.proc.poll() is not None:
                raise RuntimeError(f"memoryd exited: {self.log.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"memoryd did not start: {self.log.read_text()}")
            time.sleep(0.05)
        return self

    def _limit_descriptors(self) -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def _caught_up_since(self, offset: int) -> bool:
        with open(self.log, "rb") as f:
            f.seek(offset)
            return b": caught up, " in f.read()

    def stop(self) -> int:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(20)
        return self.proc.returncode if self.proc else 0

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(20)
