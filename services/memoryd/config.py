"""memoryd's configuration (spec 11): a TOML file, every key optional, unknown keys refused.

[paths]   home = "/var/lib/boxmaker"   # default: $BOXMAKER_HOME, then /var/lib/boxmaker
[memory]  soul_starter = "soul.md"     # next to the config file
          review = false
[index]   max_class = "private"
[sockets] loop, broker, admin          # defaults under {home}/run/ (spec 7)
"""

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ConfigError
from memoryd.home import Home
from proto.labels import CLASSES

DEFAULT_HOME = "/var/lib/boxmaker"
_KEYS = {
    "paths": {"home"},
    "memory": {"soul_starter", "review"},
    "index": {"max_class"},
    "sockets": {"loop", "broker", "admin"},
}


@dataclass(frozen=True)
class Config:
    home: Home
    soul_starter: Path | None
    review: bool
    max_class: str
    loop_socket: Path
    broker_socket: Path
    admin_socket: Path


def default_home() -> Path:
    return Path(os.environ.get("BOXMAKER_HOME") or DEFAULT_HOME)


def _string(table: dict, key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: [{key}] must be a string")
    return value


def load(path: Path | None) -> Config:
    """Read the configuration at path (None: defaults only)."""
    data: dict = {}
    base = Path.cwd()
    if path is not None:
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path} is not valid TOML: {e}") from None
        base = path.resolve().parent
    where = str(path) if path else "defaults"
    for section, table in data.items():
        if section not in _KEYS or not isinstance(table, dict):
            raise ConfigError(f"{where}: unknown section [{section}]")
        unknown = set(table) - _KEYS[section]
        if unknown:
            raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} in [{section}]")
    paths, memory = data.get("paths", {}), data.get("memory", {})
    index, sockets = data.get("index", {}), data.get("sockets", {})

    home_text = _string(paths, "home", where)
    root = Path(home_text) if home_text else default_home()
    if not root.is_absolute():
        root = base / root
    home = Home(root)

    starter_text = _string(memory, "soul_starter", where)
    if starter_text is not None:
        soul_starter: Path | None = base / starter_text
    elif path is not None:
        soul_starter = base / "soul.md"
    else:
        soul_starter = None

    review = memory.get("review", False)
    if not isinstance(review, bool):
        raise ConfigError(f"{where}: [memory] review must be true or false")
    max_class = index.get("max_class", "private")
    if max_class not in CLASSES:
        raise ConfigError(f"{where}: [index] max_class must be one of {', '.join(CLASSES)}")

    def socket(key: str, default: Path) -> Path:
        text = _string(sockets, key, where)
        return (base / text) if text else default

    return Config(
        home=home,
        soul_starter=soul_starter,
        review=review,
        max_class=max_class,
        loop_socket=socket("loop", home.run / "loop-memory" / "memory.sock"),
        broker_socket=socket("broker", home.run / "broker-memory" / "memory.sock"),
        admin_socket=socket("admin", home.run / "owner-memory" / "admin.sock"),
    )
