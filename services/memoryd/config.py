"""memoryd's configuration (spec 11), read with proto.config.

[paths]   home = "/var/lib/boxmaker"   # default: $BOXMAKER_HOME, then /var/lib/boxmaker
[memory]  soul_starter = "soul.md"     # next to the config file
          review = false
          write_deadline = 20          # seconds a memory write may wait for the writer
[index]   max_class = "private"
          max_record_bytes = 65536     # what one record (or note) may index of its text
[sockets] loop, broker, admin          # defaults under {home}/run/ (spec 7)
"""

from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ConfigError
from memoryd.home import Home
from memoryd.indexer import RECORD_BYTES
from proto.config import ConfigFile, ConfigInvalid
from proto.labels import CLASSES

WRITE_DEADLINE = 20.0

SECTIONS = {
    "paths": {"home"},
    "memory": {"soul_starter", "review", "write_deadline"},
    "index": {"max_class", "max_record_bytes"},
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
    max_record_bytes: int = RECORD_BYTES
    # Shorter than brokerd's 30 s: a memory call not started by then is answered as not applied.
    write_deadline: float = WRITE_DEADLINE


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
    run = home.run
    record_bytes = _number(file, "index", "max_record_bytes", RECORD_BYTES, 1024, 1 << 30)
    deadline = _number(file, "memory", "write_deadline", WRITE_DEADLINE, 1, 3600)
    return Config(
        max_record_bytes=int(record_bytes),
        write_deadline=float(deadline),
        home=home,
        soul_starter=soul_starter,
        review=file.flag("memory", "review", False),
        max_class=max_class,
        loop_socket=file.path("sockets", "loop", run / "loop-memory" / "memory.sock"),
        broker_socket=file.path("sockets", "broker", run / "broker-memory" / "memory.sock"),
        admin_socket=file.path("sockets", "admin", run / "owner-memory" / "admin.sock"),
    )


def _number(file: ConfigFile, section: str, key: str, default: float, low: int, high: int) -> float:
    """A whole number (for write_deadline, a number) from low to high at [section] key."""
    value = file.value(section, key)
    if value is None:
        return default
    whole_only = key != "write_deadline"
    kinds = (int,) if whole_only else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        kind = "a whole number" if whole_only else "a number"
        raise ConfigInvalid(f"{file.source}: [{section}] {key} must be {kind} from {low} to {high}")
    return value
