"""brokerd.toml: where brokerd-shim finds its home, sockets, grants and fixtures.

[paths] home            default $BOXMAKER_HOME, then /var/lib/boxmaker
[broker] socket         default {home}/run/loop-broker/broker.sock (loopd-shim connects here)
[memory] socket         default {home}/run/broker-memory/memory.sock (memoryd's brokerd socket)
[memory] timeout_seconds  default 30: how long a memory call waits for memoryd
[grants] dir            default {home}/grants
[fixtures] dir          default {home}/fixtures

Relative paths are taken from the config file's folder. Every section is optional; an unknown
section or key is refused, so a typo cannot silently fall back to a default.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from brokerd_shim.errors import ConfigError
from proto.config import ConfigFile, ConfigInvalid
from proto.paths import BROKER_MEMORY_SOCKET, LOOP_BROKER_SOCKET, under

MEMORY_TIMEOUT = 30.0

SECTIONS: dict[str, set[str]] = {
    "paths": {"home"},
    "broker": {"socket"},
    "memory": {"socket", "timeout_seconds"},
    "grants": {"dir"},
    "fixtures": {"dir"},
}


@dataclass(frozen=True)
class Config:
    home: Path
    broker_socket: Path
    memory_socket: Path
    memory_timeout: float
    grants_dir: Path
    fixtures_dir: Path

    @property
    def ledger_dir(self) -> Path:
        return self.home / "ledger"

    @property
    def audit_dir(self) -> Path:
        return self.home / "audit"


def _timeout(file: ConfigFile) -> float:
    value = file.value("memory", "timeout_seconds")
    value = MEMORY_TIMEOUT if value is None else value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigInvalid(f"{file.source}: [memory] timeout_seconds must be a number")
    if not math.isfinite(value) or value <= 0 or value > 3600:
        raise ConfigInvalid(
            f"{file.source}: [memory] timeout_seconds must be above 0 and at most 3600"
        )
    return float(value)


def load_config(path: Path | None, environ: Mapping[str, str] | None = None) -> Config:
    """The configuration from path (None: defaults only), with the environment for the home."""
    try:
        file = ConfigFile.load(path, SECTIONS)
        home = file.home(environ)
        return Config(
            home=home,
            broker_socket=file.path("broker", "socket", under(home, LOOP_BROKER_SOCKET)),
            memory_socket=file.path("memory", "socket", under(home, BROKER_MEMORY_SOCKET)),
            memory_timeout=_timeout(file),
            grants_dir=file.path("grants", "dir", home / "grants"),
            fixtures_dir=file.path("fixtures", "dir", home / "fixtures"),
        )
    except ConfigInvalid as e:
        raise ConfigError(str(e)) from None
