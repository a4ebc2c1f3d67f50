"""loopd.toml: where {home} is, the three sockets, and the system prompt.

Every key is optional. Paths given relative are taken from the config file's folder. Without a
config file the system prompt is $BOXMAKER_SYSTEM_PROMPT, else config/system.md of the source
checkout this package runs from; a wheel install without either must be given --config.
"""

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from loopd_shim.errors import ConfigError

DEFAULT_HOME = Path("/var/lib/boxmaker")
SYSTEM_PROMPT_ENV = "BOXMAKER_SYSTEM_PROMPT"
_CHECKOUT_SYSTEM_MD = Path(__file__).resolve().parents[2] / "config" / "system.md"

_SECTIONS: dict[str, set[str]] = {
    "paths": {"home"},
    "memory": {"socket"},
    "broker": {"socket"},
    "control": {"socket"},
    "prompt": {"system"},
}


def default_home() -> Path:
    """$BOXMAKER_HOME, else /var/lib/boxmaker."""
    env = os.environ.get("BOXMAKER_HOME")
    return Path(env) if env else DEFAULT_HOME


def default_control_socket(home: Path) -> Path:
    return home / "run" / "loop-control" / "control.sock"


@dataclass(frozen=True)
class Config:
    home: Path
    memory_socket: Path
    broker_socket: Path
    control_socket: Path
    system_prompt: Path

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"


def _check_shape(data: dict, source: str) -> None:
    for section, table in data.items():
        if section not in _SECTIONS:
            raise ConfigError(f"{source}: unknown section [{section}]")
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [{section}] must be a table")
        for key, value in table.items():
            if key not in _SECTIONS[section]:
                raise ConfigError(f"{source}: unknown key {key} in [{section}]")
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{source}: [{section}] {key} must be a non-empty string")


def _default_system_prompt() -> Path:
    env = os.environ.get(SYSTEM_PROMPT_ENV)
    if env:
        return Path(env)
    if _CHECKOUT_SYSTEM_MD.is_file():
        return _CHECKOUT_SYSTEM_MD
    raise ConfigError(
        f"no system prompt: pass --config (with system.md beside it) or set {SYSTEM_PROMPT_ENV}"
    )


def load_config(path: Path | None) -> Config:
    """The configuration from path, or the defaults when path is None."""
    data: dict = {}
    base = Path.cwd()
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path} is not valid TOML: {e}") from None
        _check_shape(data, str(path))
        base = path.resolve().parent

    def get(section: str, key: str) -> Path | None:
        value = data.get(section, {}).get(key)
        return None if value is None else base / value

    home = get("paths", "home") or default_home()
    system = get("prompt", "system")
    if system is None:
        system = base / "system.md" if path is not None else _default_system_prompt()
    return Config(
        home=home,
        memory_socket=get("memory", "socket") or home / "run" / "loop-memory" / "memory.sock",
        broker_socket=get("broker", "socket") or home / "run" / "loop-broker" / "broker.sock",
        control_socket=get("control", "socket") or default_control_socket(home),
        system_prompt=system,
    )


def read_system_prompt(path: Path) -> str:
    """system.md's text without its trailing newlines; ConfigError when unreadable or empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read the system prompt {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"the system prompt {path} is not UTF-8") from None
    text = text.rstrip("\n")
    if not text.strip():
        raise ConfigError(f"the system prompt {path} is empty")
    return text
