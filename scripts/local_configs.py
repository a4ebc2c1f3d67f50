"""Lay the settings folder out for roles run as processes, pointed at another home than the image's.

The files in config/ are written for the container, where {home} is /var/lib/boxmaker. To run
the services as processes on another home (scripts/stack in process mode, the integration
tests), each TOML file at the folder's top is copied with its strings naming /var/lib/boxmaker
moved to that home (and /etc/boxmaker, where the containers see the settings, to the folder).
Every other entry (soul.md, system.md, grants/, fixtures/, whatever the owner keeps there) is a
symbolic link to the owner's own, so relative paths are found next to the copied files, as in a
container, where the folder is mounted as it is. Nothing else is read or copied: a device, a
FIFO or an editor's dangling lock (Emacs's `.#memoryd.toml`) in the folder is the role's concern
only if its settings name it, and entries whose name begins with a dot (locks, swap files) are
left out.

    python scripts/local_configs.py SOURCE_DIR DEST_DIR HOME
"""

import json
import re
import shutil
import sys
import tomllib
from pathlib import Path

IMAGE_HOME = "/var/lib/boxmaker"


class ConfigCopyError(Exception):
    """A configuration file that cannot be copied: unreadable, not TOML, or still naming the
    image's home after the rewrite."""


def _strings(value: object):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _patterns(inside: str) -> tuple[re.Pattern, re.Pattern]:
    """inside (a container folder) as the start of a TOML basic string ("..."), and as the
    start of a literal one ('...': TOML's other quotes, which an owner may use for a path)."""
    folder = re.escape(inside)
    return re.compile(rf'"{folder}(?=["/])'), re.compile(rf"'{folder}(/[^'\n]*)?'")


# The folders the containers see, as the settings may name them: the home, and the settings
# folder itself (mounted at /etc/boxmaker; scripts/check_settings.py reads such a path as the
# settings folder, so the roles run as processes must too).
IMAGE_SETTINGS = "/etc/boxmaker"
_MOVED = ((IMAGE_HOME, _patterns(IMAGE_HOME)), (IMAGE_SETTINGS, _patterns(IMAGE_SETTINGS)))


def _basic(text: str) -> str:
    """text as a TOML basic string: JSON's escapes are TOML's, for any folder name."""
    return json.dumps(text, ensure_ascii=False)


def _rewrite(text: str, home: Path, settings: Path | None = None) -> str:
    """text with the containers' home moved to home, and their settings folder to settings."""
    to = {IMAGE_HOME: str(home), IMAGE_SETTINGS: str(settings) if settings else IMAGE_SETTINGS}
    lines = []
    for line in text.splitlines(keepends=True):
        code, hash_, comment = line.partition("#")
        for inside, (basic, literal) in _MOVED:
            there = to[inside]
            code = basic.sub(lambda _, t=there: _basic(t)[:-1], code)
            code = literal.sub(lambda m, t=there: _basic(t + (m.group(1) or "")), code)
        lines.append(code + hash_ + comment)
    return "".join(lines)


def write_local_configs(source: Path, dest: Path, home: Path) -> Path:
    """Lay source out at dest (replacing dest), every TOML file pointed at home; return dest."""
    home = home.resolve()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(mode=0o700, parents=True)
    for entry in sorted(source.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.suffix == ".toml" and entry.is_file():
            _rewritten(entry, dest / entry.name, home, source.absolute())
        else:
            (dest / entry.name).symlink_to(entry.absolute())
    return dest


def _rewritten(path: Path, to: Path, home: Path, settings: Path) -> None:
    """The TOML file at path written to to, the containers' home and settings folder moved to
    home and settings."""
    try:
        # utf-8-sig: the roles read a file an editor began with a byte-order mark, so the copy
        # must too (it is written without one).
        text = _rewrite(path.read_bytes().decode("utf-8-sig"), home, settings)
        to.write_text(text, encoding="utf-8")
        values = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigCopyError(f"{path}: {e}") from None
    except RecursionError:  # tomllib nests a frame a level: a small file can pass its limit
        raise ConfigCopyError(f"{path}: not valid TOML: its values are nested too deeply") from None
    left = [s for s in _strings(values) if IMAGE_HOME in s]
    if left:
        raise ConfigCopyError(f"{path} still names {IMAGE_HOME}: {left[0]!r}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    try:
        print(write_local_configs(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
    except (ConfigCopyError, OSError) as e:
        sys.exit(f"the settings cannot be copied for the roles: {e}")
