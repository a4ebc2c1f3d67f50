"""loopd.toml: where {home} is, the three sockets, the system prompt, how long a tool call
waits for brokerd-shim ([broker] timeout_seconds, default 60: above brokerd-shim's own wait for
memoryd, so that brokerd-shim's answer on a memory write comes before loopd-shim gives up), and
how many sessions may be open at once ([sessions] max_open and idle_minutes: opensessions.py).

Every key is optional. Paths given relative are taken from the config file's folder. Without a
config file the system prompt is $BOXMAKER_SYSTEM_PROMPT, else config/system.md of the source
checkout this package runs from; a wheel install without either must be given --config.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from loopd_shim.errors import ConfigError
from loopd_shim.opensessions import IDLE_MINUTES, MAX_OPEN
from proto.config import ConfigFile, ConfigInvalid
from proto.files import TooLarge, read_setting
from proto.paths import LOOP_BROKER_SOCKET, LOOP_CONTROL_SOCKET, LOOP_MEMORY_SOCKET, under

SYSTEM_PROMPT_ENV = "BOXMAKER_SYSTEM_PROMPT"
# The saved baseline (system.md, the memory block, the tools) goes back whole in the start reply,
# one frame of at most 1 MiB; and a prompt this long is already many times the 3,000 tokens the
# spec allows the whole baseline. A longer system.md is refused at start and by the check, not
# found out at every session's start.
SYSTEM_PROMPT_BYTES = 1 << 16
BROKER_TIMEOUT = 60.0
_CHECKOUT_SYSTEM_MD = Path(__file__).resolve().parents[2] / "config" / "system.md"

_SECTIONS: dict[str, set[str]] = {
    "paths": {"home"},
    "memory": {"socket"},
    "broker": {"socket", "timeout_seconds"},
    "control": {"socket"},
    "prompt": {"system"},
    "sessions": {"max_open", "idle_minutes"},
}


def default_control_socket(home: Path) -> Path:
    return under(home, LOOP_CONTROL_SOCKET)


@dataclass(frozen=True)
class Config:
    home: Path
    memory_socket: Path
    broker_socket: Path
    control_socket: Path
    system_prompt: Path
    broker_timeout: float = BROKER_TIMEOUT
    max_open_sessions: int = MAX_OPEN
    session_idle_minutes: float = IDLE_MINUTES

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"


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
    try:
        file = ConfigFile.load(path, _SECTIONS)
        home = file.home()
        system = file.string("prompt", "system")
        if system is not None:
            system_prompt = file.base / system
        elif path is not None:
            system_prompt = file.base / "system.md"
        else:
            system_prompt = _default_system_prompt()
        return Config(
            home=home,
            memory_socket=file.path("memory", "socket", under(home, LOOP_MEMORY_SOCKET)),
            broker_socket=file.path("broker", "socket", under(home, LOOP_BROKER_SOCKET)),
            control_socket=file.path("control", "socket", default_control_socket(home)),
            system_prompt=system_prompt,
            broker_timeout=float(
                file.number("broker", "timeout_seconds", BROKER_TIMEOUT, low=1, high=7200)
            ),
            max_open_sessions=file.whole("sessions", "max_open", MAX_OPEN, low=1, high=100000),
            session_idle_minutes=float(
                file.number("sessions", "idle_minutes", IDLE_MINUTES, low=1, high=10080)
            ),
        )
    except ConfigInvalid as e:
        raise ConfigError(str(e)) from None


def read_system_prompt(path: Path) -> str:
    """system.md's text without its trailing newlines; ConfigError when unreadable (a FIFO is
    refused, not waited on), over SYSTEM_PROMPT_BYTES, not UTF-8 or empty."""
    try:
        # utf-8-sig: an editor that starts the file with a byte-order mark (Notepad does); the
        # mark would otherwise open every prompt, invisible.
        text = read_setting(path, SYSTEM_PROMPT_BYTES).decode("utf-8-sig")
    except TooLarge:
        raise ConfigError(
            f"the system prompt {path} is larger than {SYSTEM_PROMPT_BYTES:,} bytes, the limit; "
            "shorten it"
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read the system prompt {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"the system prompt {path} is not UTF-8") from None
    text = text.rstrip("\n")
    if not text.strip():
        raise ConfigError(f"the system prompt {path} is empty")
    return text
