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
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from brokerd_shim.errors import ConfigError

DEFAULT_HOME = "/var/lib/boxmaker"
MEMORY_TIMEOUT = 30.0

_KEYS: dict[str, set[str]] = {
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


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except OSError as e:
        raise ConfigError(f"config file {path} cannot be read: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None


def _check_keys(data: dict, source: str) -> None:
    for section, table in data.items():
        if section not in _KEYS:
            raise ConfigError(f"{source}: unknown section [{section}]")
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: {section} must be a table")
        for key in table:
            if key not in _KEYS[section]:
                raise ConfigError(f"{source}: unknown key {key} in [{section}]")


def _path(data: dict, section: str, key: str, base: Path, default: Path, source: str) -> Path:
    value = data.get(section, {}).get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not value or "\0" in value:
        raise ConfigError(f"{source}: [{section}] {key} must be a non-empty path")
    path = Path(value)
    return path if path.is_absolute() else base / path


def _timeout(data: dict, source: str) -> float:
    value = data.get("memory", {}).get("timeout_seconds", MEMORY_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{source}: [memory] timeout_seconds must be a number")
    if not math.isfinite(value) or value <= 0 or value > 3600:
        raise ConfigError(f"{source}: [memory] timeout_seconds must be above 0 and at most 3600")
    return float(value)


def load_config(path: Path | None, environ: dict[str, str] | None = None) -> Config:
    """The configuration from path (None: defaults only), with the environment for the home."""
    environ = os.environ if environ is None else environ
    if path is None:
        data, base, source = {}, Path.cwd(), "defaults"
    else:
        path = Path(path).absolute()
        data, base, source = _read(path), path.parent, str(path)
    _check_keys(data, source)
    default_home = Path(environ.get("BOXMAKER_HOME") or DEFAULT_HOME)
    home = _path(data, "paths", "home", base, default_home, source).absolute()
    return Config(
        home=home,
        broker_socket=_path(
            data, "broker", "socket", base, home / "run/loop-broker/broker.sock", source
        ),
        memory_socket=_path(
            data, "memory", "socket", base, home / "run/broker-memory/memory.sock", source
        ),
        memory_timeout=_timeout(data, source),
        grants_dir=_path(data, "grants", "dir", base, home / "grants", source),
        fixtures_dir=_path(data, "fixtures", "dir", base, home / "fixtures", source),
    )
