"""The M5a stack (memoryd, brokerd-shim, loopd-shim) on a temporary home, for integration tests.

Two ways to bring it up, one interface (Stack), so a scenario is written once and runs in both:

- ProcessStack: the three services as subprocesses of this Python, with the example
  configuration copied next to the home and pointed at it (scripts/local_configs.py).
- ContainerStack (container_stack.py): one container per role from the built image, rootful or
  rootless, locked down as compose.yaml has it.

The driver (loopd-shim start|say|answer) and bxctl always run on the host from this venv, against
the sockets in the home; ContainerStack.bxctl_inside runs bxctl by exec in memoryd's container.
"""

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path

from tests.rawsocket import answers as _answers

REPO = Path(__file__).resolve().parents[2]
CONFIG_DIR = REPO / "config"
IMAGE = os.environ.get("BOXMAKER_IMAGE", "localhost/boxmaker-memory:dev")
IMAGE_HOME = "/var/lib/boxmaker"
IMAGE_UID = 10001
SERVICES = ("memoryd", "brokerd-shim", "loopd-shim")
CONFIG_OF = {"memoryd": "memoryd.toml", "brokerd-shim": "brokerd.toml", "loopd-shim": "loopd.toml"}

# Every socket of the stack, relative to the home.
SOCKETS = {
    "loop-memory": "run/loop-memory/memory.sock",
    "broker-memory": "run/broker-memory/memory.sock",
    "owner-memory": "run/owner-memory/admin.sock",
    "loop-broker": "run/loop-broker/broker.sock",
    "loop-control": "run/loop-control/control.sock",
}

# What each role's container mounts from the home (compose.yaml says the same): folder -> mode.
MOUNTS = {
    "memoryd": {
        "memory": "rw",
        "index": "rw",
        "backups": "rw",
        "sessions": "ro",
        "run/loop-memory": "rw",
        "run/broker-memory": "rw",
        "run/owner-memory": "rw",
    },
    "brokerd-shim": {
        "grants": "ro",
        "fixtures": "ro",
        "ledger": "rw",
        "audit": "rw",
        "run/broker-memory": "rw",
        "run/loop-broker": "rw",
    },
    "loopd-shim": {
        "sessions": "rw",
        "run/loop-memory": "rw",
        "run/loop-broker": "rw",
        "run/loop-control": "rw",
    },
}
# Each role sets 0700 on {home} and {home}/run at start; a read-only root cannot be chmodded,
# so both are small tmpfs owned by the container's user (podman's `U` option).
TMPFS = {
    IMAGE_HOME: "rw,mode=0700,U",
    f"{IMAGE_HOME}/run": "rw,mode=0700,U",
    "/tmp": "rw,mode=1777",
}


class StackError(Exception):
    """The stack did not come up, or a service could not be started or stopped."""


def _local_configs_module():
    spec = importlib.util.spec_from_file_location(
        "local_configs", REPO / "scripts/local_configs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def venv_command(name: str) -> str:
    """The console script name of this venv (memoryd, bxctl, loopd-shim, brokerd-shim)."""
    beside = Path(sys.executable).with_name(name)
    return os.fspath(beside) if beside.exists() else shutil.which(name) or name


def short_temp_home(prefix: str) -> Path:
    """A fresh folder in the run's temporary folder (tests/conftest.py; /tmp outside pytest):
    socket paths must stay under 108 bytes, and pytest's tmp_path may not."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def make_settings(root: Path, changes: dict[str, str] | None = None) -> Path:
    """The owner's settings folder as scripts/stack seeds it (config/'s files, not its folders),
    with changes (file name -> text) written over the copies."""
    settings = root / "settings"
    settings.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in CONFIG_DIR.iterdir():
        if path.is_file():
            shutil.copy2(path, settings / path.name)
    for name, text in (changes or {}).items():
        (settings / name).write_text(text, encoding="utf-8")
    return settings


def make_home(root: Path) -> Path:
    """The home's folders, 0700, with the example grant and fixtures copied in."""
    home = root / "home"
    for folder in {folder for mounts in MOUNTS.values() for folder in mounts}:
        (home / folder).mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in (home, home / "run"):
        folder.chmod(0o700)
    for name in ("grants", "fixtures"):
        shutil.copytree(CONFIG_DIR / name, home / name, dirs_exist_ok=True)
    return home


class Stack(ABC):
    """A running stack on its own home; stop() ends it and removes the home."""

    mode: str
    home: Path

    @property
    def control_socket(self) -> Path:
        return self.home / SOCKETS["loop-control"]

    @property
    def admin_socket(self) -> Path:
        return self.home / SOCKETS["owner-memory"]

    def socket_paths(self) -> dict[str, Path]:
        return {name: self.home / relative for name, relative in SOCKETS.items()}

    def _host_env(self) -> dict[str, str]:
        return {**os.environ, "BOXMAKER_HOME": os.fspath(self.home)}

    def driver(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """loopd-shim's driver CLI (start, say, answer, baseline) against this stack."""
        command = [venv_command("loopd-shim"), *args]
        if args and args[0] in ("start", "say", "answer"):
            command += ["--control-socket", os.fspath(self.control_socket)]
        return subprocess.run(
            command, env=self._host_env(), capture_output=True, text=True, timeout=timeout
        )

    def bxctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """bxctl from the host, through the admin socket in the home."""
        command = [venv_command("bxctl"), *args, "--memory-socket", os.fspath(self.admin_socket)]
        return subprocess.run(
            command, env=self._host_env(), capture_output=True, text=True, timeout=timeout
        )

    def bxctl_inside(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """bxctl where memoryd runs: the host for processes, an exec for containers."""
        return self.bxctl(*args, timeout=timeout)

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until every socket of the stack accepts a connection."""
        deadline = time.monotonic() + timeout
        while True:
            silent = [name for name, path in self.socket_paths().items() if not _answers(path)]
            if not silent:
                return
            if time.monotonic() > deadline:
                raise StackError(
                    f"{self.mode} stack: no answer on {', '.join(silent)} after {timeout:g}s\n"
                    + self.logs()
                )
            time.sleep(0.2)

    @abstractmethod
    def start_service(self, name: str) -> None: ...

    @abstractmethod
    def kill_service(self, name: str) -> None: ...

    @abstractmethod
    def logs(self) -> str: ...

    @abstractmethod
    def stop(self) -> None: ...


class ProcessStack(Stack):
    mode = "process"

    def __init__(self, root: Path):
        self.root = root
        self.home = make_home(root)
        self.configs = _local_configs_module().write_local_configs(
            CONFIG_DIR, root / "config", self.home
        )
        self.processes: dict[str, subprocess.Popen] = {}

    def start_service(self, name: str) -> None:
        if name in self.processes and self.processes[name].poll() is None:
            raise StackError(f"{name} already runs (pid {self.processes[name].pid})")
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - the child holds it open
        with log:
            self.processes[name] = subprocess.Popen(
                [
                    venv_command(name),
                    "serve",
                    "--config",
                    os.fspath(self.configs / CONFIG_OF[name]),
                ],
                env=self._host_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def kill_service(self, name: str) -> None:
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def start(self) -> "ProcessStack":
        for name in SERVICES:
            self.start_service(name)
        return self

    def logs(self) -> str:
        return "".join(
            f"--- {name}\n{(self.root / f'{name}.log').read_text(errors='replace')}"
            for name in SERVICES
            if (self.root / f"{name}.log").exists()
        )

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.processes.clear()
        shutil.rmtree(self.root, ignore_errors=True)
