"""memoryd's configuration (spec 11), read with proto.config.

[paths]   home = "/var/lib/boxmaker"   # default: $BOXMAKER_HOME, then /var/lib/boxmaker
[memory]  soul_starter = "soul.md"     # next to the config file; without one (or with no config
                                       # file at all) the starter shipped in this package
          review = false
[index]   max_class = "private"
[sockets] loop, broker, admin          # defaults under {home}/run/ (spec 7)
"""

from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ConfigError
from memoryd.home import Home
from proto.config import ConfigFile, ConfigInvalid
from proto.labels import CLASSES

# The generic starter persona (spec 3), shipped as package data; config/soul.md is the same file.
PACKAGED_SOUL = Path(__file__).with_name("soul.md")

SECTIONS = {
    "paths": {"home"},
    "memory": {"soul_starter", "review"},
    "index": {"max_class"},
    "sockets": {"loop", "broker", "admin"},
}


@dataclass(frozen=True)
class Config:
    home: Home
    soul_starter: Path
    review: bool
    max_class: str
    loop_socket: Path
    broker_socket: Path
    admin_socket: Path


def load(path: Path | None) -> Config:
    """Read the configuration at path (None: defaults only)."""
    try:
        return _load(ConfigFile.load(path, SECTIONS), has_file=path is not None)
    except ConfigInvalid as e:
        raise ConfigError(str(e)) from None


def _load(file: ConfigFile, has_file: bool) -> Config:
    home = Home(file.home())
    starter = file.string("memory", "soul_starter")
    if starter is not None:
        soul_starter = file.base / starter
    elif has_file and (file.base / "soul.md").exists():
        soul_starter = file.base / "soul.md"
    else:
        soul_starter = PACKAGED_SOUL
    max_class = file.value("index", "max_class") or "private"
    if max_class not in CLASSES:
        raise ConfigInvalid(f"{file.source}: [index] max_class must be one of {', '.join(CLASSES)}")
    run = home.run
    return Config(
        home=home,
        soul_starter=soul_starter,
        review=file.flag("memory", "review", False),
        max_class=max_class,
        loop_socket=file.path("sockets", "loop", run / "loop-memory" / "memory.sock"),
        broker_socket=file.path("sockets", "broker", run / "broker-memory" / "memory.sock"),
        admin_socket=file.path("sockets", "admin", run / "owner-memory" / "admin.sock"),
    )
