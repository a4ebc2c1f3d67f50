"""Check the stack's settings on the host with the code the roles run, before anything starts.

    python scripts/check_settings.py SETTINGS_DIR HOME          check; one line per mistake
    python scripts/check_settings.py --hashes SETTINGS_DIR      print "ROLE HASH" per role

SETTINGS_DIR is the folder bind-mounted read-only at /etc/boxmaker in every container (the
owner's copy of config/); HOME is the home on the host. Each role's file is read by that role's
own loader (memoryd.config, loopd_shim.config, brokerd_shim.config), the files it names are read
as the role reads them (the starter soul, the system prompt), and the grants in HOME/grants by
brokerd-shim's own grants module. A mistake is one line naming the host file, the key and what is
wrong; exit 1 when there is one. Paths the settings give under the containers' home
(/var/lib/boxmaker) are looked for in HOME.

--hashes prints, for each role, a hash of the files that role reads from SETTINGS_DIR:
scripts/stack labels each container with it and recreates a role whose label differs.
"""

import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

CONTAINER_HOME = Path("/var/lib/boxmaker")
SETTINGS_MOUNT = Path("/etc/boxmaker")
# What each role reads from the settings folder by default.
ROLE_FILES = {
    "memoryd": ("memoryd.toml", "soul.md"),
    "brokerd-shim": ("brokerd.toml",),
    "loopd-shim": ("loopd.toml", "system.md"),
}


def on_host(path: Path, settings: Path, home: Path) -> Path:
    """A path as a role in a container names it, where the owner finds it on the host."""
    for inside, outside in ((SETTINGS_MOUNT, settings), (CONTAINER_HOME, home)):
        if path == inside or inside in path.parents:
            return outside / path.relative_to(inside)
    return path


def _home_stays(source: Path, home: Path) -> str | None:
    if home != CONTAINER_HOME:
        return (
            f"{source}: [paths] home must stay {CONTAINER_HOME} in the containers "
            "(the home on the host is BOXMAKER_HOME)"
        )
    return None


def check_memoryd(settings: Path, home: Path) -> list[str]:
    from memoryd import config
    from memoryd.errors import MemorydError
    from proto.files import read_setting

    path = settings / "memoryd.toml"
    try:
        cfg = config.load(path)
    except MemorydError as e:
        return [str(e)]
    problems = [_home_stays(path, cfg.home.root)]
    if cfg.soul_starter != config.PACKAGED_SOUL:
        # Read as memoryd reads it into a new home: a FIFO is refused, not waited on; a starter
        # memoryd could never serve (not UTF-8, over soul.md's limit) is a mistake too.
        starter = on_host(cfg.soul_starter, settings, home)
        try:
            data = read_setting(starter, config.SOUL_STARTER_BYTES)
        except OSError as e:
            problems.append(f"{starter}: cannot read the starter soul: {e.strerror or e}")
        else:
            problems.append(config.soul_starter_problem(starter, data))
    return [p for p in problems if p]


def check_loopd(settings: Path, home: Path) -> list[str]:
    from loopd_shim.config import load_config, read_system_prompt
    from loopd_shim.errors import LoopdError

    path = settings / "loopd.toml"
    try:
        cfg = load_config(path)
        read_system_prompt(on_host(cfg.system_prompt, settings, home))
    except LoopdError as e:
        return [str(e)]
    return [p for p in [_home_stays(path, cfg.home)] if p]


def check_brokerd(settings: Path, home: Path) -> list[str]:
    from brokerd_shim.config import load_config
    from brokerd_shim.errors import BrokerError
    from brokerd_shim.grants import load_grants

    path = settings / "brokerd.toml"
    try:
        cfg = load_config(path, {"BOXMAKER_HOME": os.fspath(CONTAINER_HOME)})
    except BrokerError as e:
        return [str(e)]
    problems = [_home_stays(path, cfg.home)]
    grants = on_host(cfg.grants_dir, settings, home)
    for problem in load_grants(grants).problems:
        # A problem names the grant's file name; the owner needs the folder too.
        problems.append(problem if problem.startswith(os.fspath(grants)) else f"{grants}/{problem}")
    return [p for p in problems if p]


CHECKS: dict[str, Callable[[Path, Path], list[str]]] = {
    "memoryd": check_memoryd,
    "brokerd-shim": check_brokerd,
    "loopd-shim": check_loopd,
}


def check(settings: Path, home: Path) -> list[str]:
    """Every mistake in the settings, one line each, as "ROLE: the role's own message"."""
    # The roles in the containers find their home here; a stray one on the host must not count.
    os.environ["BOXMAKER_HOME"] = os.fspath(CONTAINER_HOME)
    problems = []
    for role, check_role in CHECKS.items():
        # Only a missing file is named here; one that is there but is no regular file (a folder,
        # a FIFO) is refused by the role's own loader, which says what it is.
        if not (settings / ROLE_FILES[role][0]).exists():
            problems.append(f"{role}: {settings / ROLE_FILES[role][0]}: missing")
            continue
        problems += [f"{role}: {line}" for line in check_role(settings, home)]
    return problems


def role_hash(settings: Path, role: str) -> str:
    """A hash of the files role reads from settings (a missing file counts as missing)."""
    digest = hashlib.sha256()
    for name in ROLE_FILES[role]:
        path = settings / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"\0missing\0")
    return digest.hexdigest()[:16]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--hashes"] and len(argv) == 2:
        for role in ROLE_FILES:
            print(role, role_hash(Path(argv[1]), role))
        return 0
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    problems = check(Path(argv[0]).absolute(), Path(argv[1]).absolute())
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
