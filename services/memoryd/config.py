"""memoryd's configuration (spec 11), read with proto.config.

[paths]   home = "/var/lib/boxmaker"   # default: $BOXMAKER_HOME, then /var/lib/boxmaker
[memory]  soul_starter = "soul.md"     # next to the config file
          review = false
[index]   max_class = "private"
[recall]  mode = "spec"                # spec | context | hybrid (design section 8)
[sockets] loop, broker, admin          # defaults under {home}/run/ (spec 7)
[limits]  loop_connections = 256      # open connections each socket holds at most
          broker_connections = 256
          admin_connections = 64
          request_seconds = 5.0       # a whole request must arrive within this
          reply_seconds = 10.0        # the peer must take its reply within this
"""

from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ConfigError
from memoryd.home import Home
from memoryd.modes import MODES as RECALL_MODES
from proto.config import ConfigFile, ConfigInvalid
from proto.labels import CLASSES

SECTIONS = {
    "paths": {"home"},
    "memory": {"soul_starter", "review"},
    "index": {"max_class"},
    "recall": {"mode"},
    "sockets": {"loop", "broker", "admin"},
    "limits": {
        "loop_connections",
        "broker_connections",
        "admin_connections",
        "request_seconds",
        "reply_seconds",
    },
}


@dataclass(frozen=True)
class Limits:
    """What one peer may hold of memoryd: connections per socket, seconds per request and reply."""

    loop_connections: int = 256
    broker_connections: int = 256
    admin_connections: int = 64
    request_seconds: float = 5.0
    reply_seconds: float = 10.0


@dataclass(frozen=True)
class Config:
    home: Home
    soul_starter: Path | None
    review: bool
    max_class: str
    loop_socket: Path
    broker_socket: Path
    admin_socket: Path
    limits: Limits = Limits()
    recall_mode: str = "spec"


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
        soul_starter: Path | None = file.base / starter
    else:
        soul_starter = file.base / "soul.md" if has_file else None
    max_class = file.value("index", "max_class") or "private"
    if max_class not in CLASSES:
        raise ConfigInvalid(f"{file.source}: [index] max_class must be one of {', '.join(CLASSES)}")
    recall_mode = file.string("recall", "mode") or "spec"
    if recall_mode not in RECALL_MODES:
        raise ConfigInvalid(
            f"{file.source}: [recall] mode must be one of {', '.join(RECALL_MODES)}"
        )
    run = home.run
    return Config(
        home=home,
        soul_starter=soul_starter,
        review=file.flag("memory", "review", False),
        max_class=max_class,
        loop_socket=file.path("sockets", "loop", run / "loop-memory" / "memory.sock"),
        broker_socket=file.path("sockets", "broker", run / "broker-memory" / "memory.sock"),
        admin_socket=file.path("sockets", "admin", run / "owner-memory" / "admin.sock"),
        limits=_limits(file),
        recall_mode=recall_mode,
    )


def _limits(file: ConfigFile) -> Limits:
    default = Limits()
    return Limits(
        **{
            key: file.whole("limits", key, getattr(default, key), low=1, high=100_000)
            for key in ("loop_connections", "broker_connections", "admin_connections")
        },
        **{
            key: file.number("limits", key, getattr(default, key), low=0.1, high=3600)
            for key in ("request_seconds", "reply_seconds")
        },
    )
