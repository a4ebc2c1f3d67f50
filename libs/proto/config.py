"""A role's TOML configuration file, read the same way by every role.

Every section and key is optional; an unknown one is refused, so a typo cannot silently fall back
to a default. The file is read as every settings file is (proto.files.read_setting): a FIFO, a
folder or a device there is refused at once rather than waited on, and so is a file over
CONFIG_BYTES. Paths given relative are taken from the file's folder. {home} is [paths] home, else
$BOXMAKER_HOME, else /var/lib/boxmaker. Each role lists its sections and keys and turns
ConfigInvalid into its own start error.
"""

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from proto.errors import ProtoError
from proto.files import read_setting

DEFAULT_HOME = Path("/var/lib/boxmaker")
# A role's settings are a few hundred bytes; far more is not a settings file, and is not read.
CONFIG_BYTES = 1 << 20


class ConfigInvalid(ProtoError):
    """A configuration file that cannot be read, is not TOML, or has a wrong key or value."""


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    """$BOXMAKER_HOME, else /var/lib/boxmaker."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("BOXMAKER_HOME") or DEFAULT_HOME)


def host_paths(text: str, home: Path) -> str:
    """text with the containers' home (/var/lib/boxmaker) shown as this side's home.

    A role in a container names its own paths; a message shown on the host (the driver, bxctl)
    should name the folder the owner can open. Display only: nothing decides on the result.
    """
    inside = f"{DEFAULT_HOME}/"
    if home == DEFAULT_HOME or inside not in text:
        return text
    return text.replace(inside, f"{home}/")


def _named(name: str) -> str:
    """A section or key the file names, as one line shows it: TOML's quoted keys may hold line
    breaks and terminal codes, which are escaped (JSON's quoting) so the error stays one line."""
    if name.isprintable() and name.strip() == name and name:
        return name
    return json.dumps(name)


def read_toml(path: Path) -> dict:
    """The TOML table of the settings file at path, read as every role reads it; anything that
    keeps it from being read is one ConfigInvalid naming the file, never a traceback."""
    try:
        # utf-8-sig: an editor that starts the file with a byte-order mark (Notepad does)
        # wrote the same settings; TOML would call the invisible mark an invalid statement.
        return tomllib.loads(read_setting(path, CONFIG_BYTES).decode("utf-8-sig"))
    except OSError as e:
        raise ConfigInvalid(f"cannot read {path}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigInvalid(f"{path} is not valid TOML: {e}") from None
    except RecursionError:
        # tomllib reads a nested array or table by recursion: some hundreds of brackets in a
        # file of a kilobyte exhaust Python's stack. No setting is nested more than once.
        raise ConfigInvalid(f"{path} is not valid TOML: its values are nested too deeply") from None


@dataclass(frozen=True)
class ConfigFile:
    data: dict
    base: Path
    source: str

    @classmethod
    def load(cls, path: Path | None, sections: Mapping[str, set[str]]) -> "ConfigFile":
        """Read path (None: no file, defaults only) and refuse unknown sections and keys."""
        if path is None:
            return cls({}, Path.cwd(), "defaults")
        path = Path(path).absolute()
        data = read_toml(path)
        source = str(path)
        for section, table in data.items():
            if section not in sections:
                raise ConfigInvalid(f"{source}: unknown section [{_named(section)}]")
            if not isinstance(table, dict):
                raise ConfigInvalid(f"{source}: {_named(section)} must be a table")
            for key in table:
                if key not in sections[section]:
                    raise ConfigInvalid(
                        f"{source}: unknown key {_named(key)} in [{_named(section)}]"
                    )
        return cls(data, path.parent, source)

    def value(self, section: str, key: str) -> object:
        return self.data.get(section, {}).get(key)

    def string(self, section: str, key: str) -> str | None:
        value = self.value(section, key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigInvalid(f"{self.source}: [{section}] {key} must be a non-empty string")
        if value is not None and "\0" in value:
            raise ConfigInvalid(f"{self.source}: [{section}] {key} must not hold a NUL character")
        return value

    def path(self, section: str, key: str, default: Path) -> Path:
        """The path at [section] key, relative to the file's folder, or default."""
        value = self.string(section, key)
        return default if value is None else self.base / value

    def flag(self, section: str, key: str, default: bool) -> bool:
        value = self.value(section, key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigInvalid(f"{self.source}: [{section}] {key} must be true or false")
        return value

    def number(self, section: str, key: str, default: float, *, low: float, high: float) -> float:
        """A number (int or float) at [section] key, from low to high, or default."""
        value = self.value(section, key)
        if value is None:
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value <= high
        ):
            raise ConfigInvalid(
                f"{self.source}: [{section}] {key} must be a number from {low:g} to {high:g}"
            )
        return value

    def whole(self, section: str, key: str, default: int, *, low: int, high: int) -> int:
        """A whole number at [section] key, from low to high, or default."""
        value = self.value(section, key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigInvalid(
                f"{self.source}: [{section}] {key} must be a whole number from {low} to {high}"
            )
        return value

    def home(self, environ: Mapping[str, str] | None = None) -> Path:
        return self.path("paths", "home", default_home(environ)).absolute()
