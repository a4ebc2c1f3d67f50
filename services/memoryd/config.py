"""memoryd's configuration (spec 11), read with proto.config.

[paths]   home = "/var/lib/boxmaker"   # default: $BOXMAKER_HOME, then /var/lib/boxmaker
[memory]  soul_starter = "soul.md"     # next to the config file; without one (or with no config
                                       # file at all) the starter shipped in this package
          review = false
          write_deadline = 20          # seconds a memory write may wait for the writer
[index]   max_class = "private"
          max_record_bytes = 65536     # what one record (or note) may index of its text
[recall]  mode = "spec"                # spec | context | hybrid (design section 8)
[sockets] loop, broker, admin          # defaults under {home}/run/ (spec 7)
[limits]  loop_connections = 256      # open connections each socket holds at most
          broker_connections = 256
          admin_connections = 64
          request_seconds = 10.0      # a whole request must arrive within this (design 2)
          reply_seconds = 10.0        # the peer must take its reply within this
"""

from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ConfigError, FileDamaged, StartFailed
from memoryd.home import Home
from memoryd.index.indexer import RECORD_BYTES
from memoryd.memory import entries
from memoryd.memory.entries import LIMITS, count
from memoryd.modes import MODES as RECALL_MODES
from proto.config import ConfigFile, ConfigInvalid
from proto.files import read_setting
from proto.labels import CLASSES
from proto.paths import BROKER_MEMORY_SOCKET, LOOP_MEMORY_SOCKET, OWNER_ADMIN_SOCKET, under
from proto.server import REQUEST_TIMEOUT
from proto.trim import trim

WRITE_DEADLINE = 20.0
# soul.md's limit is 4,000 characters, at most 4 bytes each in UTF-8; room left for a byte order
# mark and the blank lines the block trims. Past this the starter is refused unread.
SOUL_STARTER_BYTES = 1 << 16
# The generic starter persona (spec 3), shipped as package data; config/soul.md is the same file.
PACKAGED_SOUL = Path(__file__).with_name("soul.md")

SECTIONS = {
    "paths": {"home"},
    "memory": {"soul_starter", "review", "write_deadline"},
    "index": {"max_class", "max_record_bytes"},
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
    # The wire's fixed deadline (design 2), the one the shims take from proto as well.
    request_seconds: float = REQUEST_TIMEOUT
    reply_seconds: float = 10.0


@dataclass(frozen=True)
class Config:
    home: Home
    soul_starter: Path
    review: bool
    max_class: str
    loop_socket: Path
    broker_socket: Path
    admin_socket: Path
    limits: Limits = Limits()
    recall_mode: str = "spec"
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
        soul_starter = file.base / starter
    elif has_file and (file.base / "soul.md").exists():
        soul_starter = file.base / "soul.md"
    else:
        soul_starter = PACKAGED_SOUL
    max_class = file.value("index", "max_class")
    max_class = "private" if max_class is None else max_class
    # "" or false is a mistake, not "unset": taken as the default it would widen what is indexed.
    if not isinstance(max_class, str) or max_class not in CLASSES:
        raise ConfigInvalid(f"{file.source}: [index] max_class must be one of {', '.join(CLASSES)}")
    recall_mode = file.string("recall", "mode") or "spec"
    if recall_mode not in RECALL_MODES:
        raise ConfigInvalid(
            f"{file.source}: [recall] mode must be one of {', '.join(RECALL_MODES)}"
        )
    record_bytes = _number(file, "index", "max_record_bytes", RECORD_BYTES, 1024, 1 << 30)
    deadline = _number(file, "memory", "write_deadline", WRITE_DEADLINE, 1, 3600)
    return Config(
        max_record_bytes=int(record_bytes),
        write_deadline=float(deadline),
        home=home,
        soul_starter=soul_starter,
        review=file.flag("memory", "review", False),
        max_class=max_class,
        loop_socket=file.path("sockets", "loop", under(home.root, LOOP_MEMORY_SOCKET)),
        broker_socket=file.path("sockets", "broker", under(home.root, BROKER_MEMORY_SOCKET)),
        admin_socket=file.path("sockets", "admin", under(home.root, OWNER_ADMIN_SOCKET)),
        limits=_limits(file),
        recall_mode=recall_mode,
    )


def read_soul_starter(path: Path) -> bytes:
    """The starter soul.md's bytes, refused (StartFailed, one line) when memoryd could never serve
    it: not a regular file (a FIFO is not waited on), not UTF-8, or over soul.md's limit. Copied
    into a new home, a starter like that would refuse every session's memory block."""
    try:
        data = read_setting(path, SOUL_STARTER_BYTES)
    except OSError as e:
        raise StartFailed(
            f"the soul.md starter {path} cannot be read ({e.strerror or e})"
        ) from None
    problem = soul_starter_problem(path, data)
    if problem is not None:
        raise StartFailed(problem)
    return data


def soul_starter_problem(path: Path, data: bytes) -> str | None:
    """Why memoryd could not serve data as soul.md (not UTF-8, over the limit), or None."""
    try:
        text = trim(entries.decode(data, f"the soul.md starter {path}"))
    except FileDamaged as e:
        return str(e)
    if len(text) > LIMITS["soul.md"]:
        return (
            f"the soul.md starter {path} is over soul.md's limit: "
            f"{count(len(text))} of {count(LIMITS['soul.md'])} characters"
        )
    return None


def _limits(file: ConfigFile) -> Limits:
    default = Limits()

    def whole(key: str) -> int:
        return file.whole("limits", key, getattr(default, key), low=1, high=100_000)

    def seconds(key: str) -> float:
        return file.number("limits", key, getattr(default, key), low=0.1, high=3600)

    return Limits(
        loop_connections=whole("loop_connections"),
        broker_connections=whole("broker_connections"),
        admin_connections=whole("admin_connections"),
        request_seconds=seconds("request_seconds"),
        reply_seconds=seconds("reply_seconds"),
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
