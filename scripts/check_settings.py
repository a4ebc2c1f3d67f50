"""Check the stack's settings on the host with the code the roles run, before anything starts.

    python scripts/check_settings.py [--containers] SETTINGS_DIR HOME   check; a line a mistake
    python scripts/check_settings.py --hashes SETTINGS_DIR      print "ROLE HASH" per role

SETTINGS_DIR is the folder bind-mounted read-only at /etc/boxmaker in every container (the
owner's copy of config/); HOME is the home on the host. Each role's file is read by that role's
own loader (memoryd.config, loopd_shim.config, brokerd_shim.config), the files it names are read
as the role reads them (the starter soul, the system prompt), and the grants in HOME/grants by
brokerd-shim's own grants module. A mistake is one line naming the host file, the key and what is
wrong; exit 1 when there is one, 3 when the roles' code cannot be loaded to check them. Paths
the settings give under the containers' home (/var/lib/boxmaker) are looked for in HOME; a socket
moved from its folder of run/, or a file a role's container does not see (compose.yaml's
volumes), is a mistake, never read on the host. With --containers (the stack runs in them), so
is a file of the settings folder its container would not see as the host does (settings_seen.py).

--hashes prints, for each role, a hash of the files that role reads from SETTINGS_DIR:
scripts/stack labels each container with it and recreates a role whose label differs.
"""

import hashlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from settings_seen import unreadable_grants, unseen

CONTAINER_HOME = Path("/var/lib/boxmaker")
SETTINGS_MOUNT = Path("/etc/boxmaker")
# What each role reads from the settings folder by default.
ROLE_FILES = {
    "memoryd": ("memoryd.toml", "soul.md"),
    "brokerd-shim": ("brokerd.toml",),
    "loopd-shim": ("loopd.toml", "system.md"),
}


COMPOSE = Path(__file__).resolve().parents[1] / "compose.yaml"
# Each role's sockets, as "file section key" -> where the socket is under the containers' home:
# compose.yaml mounts only these folders of run/, shared with the peers and the host, and
# scripts/stack asks each role on them; a socket elsewhere is reached by no one.
SOCKETS = {
    "memoryd": {
        ("memoryd.toml", "sockets", "loop"): "run/loop-memory/memory.sock",
        ("memoryd.toml", "sockets", "broker"): "run/broker-memory/memory.sock",
        ("memoryd.toml", "sockets", "admin"): "run/owner-memory/admin.sock",
    },
    "brokerd-shim": {
        ("brokerd.toml", "broker", "socket"): "run/loop-broker/broker.sock",
        ("brokerd.toml", "memory", "socket"): "run/broker-memory/memory.sock",
    },
    "loopd-shim": {
        ("loopd.toml", "memory", "socket"): "run/loop-memory/memory.sock",
        ("loopd.toml", "broker", "socket"): "run/loop-broker/broker.sock",
        ("loopd.toml", "control", "socket"): "run/loop-control/control.sock",
    },
}
# Each role's files and folders a setting may name: they must be where its container sees them.
PATHS = {
    "memoryd": [("memoryd.toml", "memory", "soul_starter")],
    "brokerd-shim": [("brokerd.toml", "grants", "dir"), ("brokerd.toml", "fixtures", "dir")],
    "loopd-shim": [("loopd.toml", "prompt", "system")],
}


def mounts(role: str) -> list[PurePosixPath]:
    """The folders role's container sees of the host (compose.yaml's volumes): the settings
    folder and its own folders of the home."""
    import yaml

    volumes = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"][role]["volumes"]
    # "${BOXMAKER_HOME:?...}/memory:/var/lib/boxmaker/memory:z": the part after the host's.
    found = (re.search(r":(/[^:]+)(:[a-z,]+)?$", volume) for volume in volumes)
    return [PurePosixPath(match.group(1)) for match in found if match]


def _table(path: Path, section: str) -> dict:
    """The [section] table of a settings file as its role reads it (proto.config.read_toml: a
    file too large, not TOML or nested too deeply is not read whole here either), or an empty
    one when it cannot be read: the role's own check says why."""
    from proto.config import ConfigInvalid, read_toml

    try:
        table = read_toml(path).get(section, {})
    except ConfigInvalid:
        return {}
    return table if isinstance(table, dict) else {}


def _setting(settings: Path, name: str, section: str, key: str) -> str | None:
    """The string the file gives at [section] key, or None."""
    value = _table(settings / name, section).get(key)
    return value if isinstance(value, str) else None


def _inside(value: str) -> PurePosixPath:
    """Where the container finds a path the settings give (a relative one is the file's folder's,
    the settings folder at /etc/boxmaker)."""
    return PurePosixPath(os.path.normpath(PurePosixPath(SETTINGS_MOUNT) / value))


def unreachable(role: str, settings: Path) -> list[str]:
    """The settings of role naming a socket or a file its container (or its peers) cannot reach:
    the role would start, bind or read on its own tmpfs or not at all, and no one could tell."""
    problems = []
    for (name, section, key), relative in SOCKETS[role].items():
        value = _setting(settings, name, section, key)
        want = PurePosixPath(CONTAINER_HOME) / relative
        if value is not None and _inside(value) != want:
            problems.append(
                f"{settings / name}: [{section}] {key} = {value!r}: in the containers this socket"
                f" must stay {want}, in the folder of run/ that compose.yaml shares with its peers"
                " and the host; remove the key"
            )
    seen = mounts(role)
    for name, section, key in PATHS[role]:
        value = _setting(settings, name, section, key)
        if value is None:
            continue
        inside = _inside(value)
        if not any(inside == top or top in inside.parents for top in seen):
            problems.append(
                f"{settings / name}: [{section}] {key} = {value!r}: {role}'s container cannot"
                f" reach {inside}: it sees only {', '.join(map(str, seen))}; put it in the"
                f" settings folder {settings} and name it relative to {name}"
            )
    return problems


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
    problems = [_home_stays(path, cfg.home.root), *unreachable("memoryd", settings)]
    if any(problems):
        return [p for p in problems if p]
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
    except LoopdError as e:
        return [str(e)]
    problems = [p for p in [_home_stays(path, cfg.home), *unreachable("loopd-shim", settings)] if p]
    if problems:
        return problems  # a prompt the container cannot reach is not read here on the host
    try:
        read_system_prompt(on_host(cfg.system_prompt, settings, home))
    except LoopdError as e:
        return [str(e)]
    return []


def check_brokerd(settings: Path, home: Path, as_root: bool = False) -> list[str]:
    """brokerd-shim's settings and the grants it would load; as_root (rootful podman), also
    whether the roles' user can read each grant, since root's own reading tells nothing of it."""
    from brokerd_shim.config import load_config
    from brokerd_shim.errors import BrokerError
    from brokerd_shim.grants import load_grants

    path = settings / "brokerd.toml"
    try:
        cfg = load_config(path, {"BOXMAKER_HOME": os.fspath(CONTAINER_HOME)})
    except BrokerError as e:
        return [str(e)]
    problems = [_home_stays(path, cfg.home), *unreachable("brokerd-shim", settings)]
    if any(problems):
        return [p for p in problems if p]
    grants = on_host(cfg.grants_dir, settings, home)
    if as_root and grants.is_dir():
        problems += unreadable_grants(grants)
    for problem in load_grants(grants).problems:
        # A problem names the grant's file name; the owner needs the folder too.
        problems.append(problem if problem.startswith(os.fspath(grants)) else f"{grants}/{problem}")
    return [p for p in problems if p]


CHECKS: dict[str, Callable[[Path, Path], list[str]]] = {
    "memoryd": check_memoryd,
    "brokerd-shim": check_brokerd,
    "loopd-shim": check_loopd,
}


# What a write memoryd began may still take before it answers: its fsyncs, the notes it indexes,
# a second at most waiting for memory-mcp to finish reading the block (memory/filesgate.py).
DEADLINE_MARGIN = 5.0


def deadlines(settings: Path) -> list[str]:
    """memoryd's write_deadline must stay below brokerd-shim's memory timeout: memoryd answers a
    memory call it could not start in time with "not applied" before brokerd-shim gives up on it;
    the other way round brokerd-shim reports a failure for a write that may still be applied."""
    from brokerd_shim.config import load_config
    from memoryd import config

    try:
        deadline = config.load(settings / "memoryd.toml").write_deadline
        timeout = load_config(
            settings / "brokerd.toml", {"BOXMAKER_HOME": os.fspath(CONTAINER_HOME)}
        )
    except Exception:  # noqa: BLE001 - each file's own mistake is said by its role's check
        return []
    problems = []
    if deadline + DEADLINE_MARGIN > timeout.memory_timeout:
        problems.append(
            f"memoryd and brokerd-shim: {settings / 'memoryd.toml'} [memory] write_deadline ="
            f" {deadline:g} must stay {DEADLINE_MARGIN:g} seconds or more below"
            f" {settings / 'brokerd.toml'} [memory] timeout_seconds = {timeout.memory_timeout:g},"
            " so that memoryd says a write was not applied, or finishes the one it began, before"
            " brokerd-shim stops waiting for it; lower write_deadline or raise timeout_seconds"
        )
    return problems + _loopd_waits(settings, timeout.memory_timeout)


def _loopd_waits(settings: Path, memory_timeout: float) -> list[str]:
    """loopd-shim must wait for brokerd-shim longer than brokerd-shim waits for memoryd, or a
    memory call brokerd-shim still carries is told to the model as unanswered."""
    from loopd_shim.config import load_config

    try:
        waits = load_config(settings / "loopd.toml").broker_timeout
    except Exception:  # noqa: BLE001 - each file's own mistake is said by its role's check
        return []
    if memory_timeout + DEADLINE_MARGIN <= waits:
        return []
    # A settings folder from before the key existed does not set it: say the default is in force
    # and where to add the key, rather than name a line the owner's file does not hold.
    written = _number(settings / "loopd.toml", "broker", "timeout_seconds") is not None
    waits_said = (
        f"[broker] timeout_seconds = {waits:g}"
        if written
        else f"sets no [broker] timeout_seconds (the default, {waits:g}, is in force), which"
    )
    todo = (
        "raise the one in loopd.toml or lower the one in brokerd.toml"
        if written
        else f"add timeout_seconds = {memory_timeout + DEADLINE_MARGIN:g} (or more) under [broker]"
        " in loopd.toml, or lower the one in brokerd.toml"
    )
    return [
        f"loopd-shim and brokerd-shim: {settings / 'loopd.toml'} {waits_said}"
        f" must stay {DEADLINE_MARGIN:g} seconds or more above"
        f" {settings / 'brokerd.toml'} [memory] timeout_seconds = {memory_timeout:g}, so that"
        " brokerd-shim's answer on a memory write reaches loopd-shim before it stops waiting;"
        f" {todo}"
    ]


def _number(path: Path, section: str, key: str) -> float | None:
    """The number the file sets at [section] key, or None when it sets none (the role's loader
    has read the file already: a mistake in it is said there)."""
    value = _table(path, section).get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def settings_read(role: str, settings: Path) -> list[str]:
    """The files of the settings folder role reads (relative to it): its own, and the ones its
    settings name there."""
    names = list(ROLE_FILES[role])
    for name, section, key in PATHS[role]:
        value = _setting(settings, name, section, key)
        inside = _inside(value) if value is not None else None
        if inside is not None and SETTINGS_MOUNT in inside.parents:
            names.append(os.fspath(inside.relative_to(SETTINGS_MOUNT)))
    return names


def check(settings: Path, home: Path, containers: bool = False) -> list[str]:
    """Every mistake in the settings, one line each, as "ROLE: the role's own message". With
    containers, also each file a role's container would not see as the host does."""
    # The roles in the containers find their home here; a stray one on the host must not count.
    os.environ["BOXMAKER_HOME"] = os.fspath(CONTAINER_HOME)
    problems = []
    for role, check_role in CHECKS.items():
        # Only a missing file is named here; one that is there but is no regular file (a folder,
        # a FIFO) is refused by the role's own loader, which says what it is.
        if not (settings / ROLE_FILES[role][0]).exists():
            problems.append(f"{role}: {settings / ROLE_FILES[role][0]}: missing")
            continue
        if containers:
            lines = unseen(settings, settings_read(role, settings), os.geteuid() == 0)
            if lines:  # what the host reads through them is not what the role would read
                problems += [f"{role}: {line}" for line in lines]
                continue
        if role == "brokerd-shim":
            lines = check_brokerd(settings, home, containers and os.geteuid() == 0)
        else:
            lines = check_role(settings, home)
        problems += [f"{role}: {line}" for line in lines]
    return problems or deadlines(settings)


def role_hash(settings: Path, role: str) -> str:
    """A hash of the files role reads from settings (a missing file counts as missing, one that
    cannot be read as unreadable: status still shows every role, and check says why)."""
    digest = hashlib.sha256()
    for name in ROLE_FILES[role]:
        digest.update(name.encode() + b"\0")
        digest.update(_hashed(settings / name))
    return digest.hexdigest()[:16]


def _hashed(path: Path) -> bytes:
    """What role_hash takes of one file: its bytes, read as its role reads them (never more than
    CONFIG_BYTES, the most a role reads of any settings file; a FIFO not waited on). A larger file
    is refused by its role unread, so it is not read here either (status runs this every time):
    its size and time of change stand for it, so the role is still recreated when it changes."""
    from proto.config import CONFIG_BYTES
    from proto.files import TooLarge, read_setting

    try:
        return read_setting(path, CONFIG_BYTES)
    except FileNotFoundError:
        return b"\0missing\0"
    except TooLarge:
        return _too_large(path)
    except OSError as e:
        return f"\0unreadable {e.errno}\0".encode()


def _too_large(path: Path) -> bytes:
    """What stands for a settings file too large to read: its size and time of change."""
    try:
        st = path.stat()
    except OSError as e:
        return f"\0unreadable {e.errno}\0".encode()
    return f"\0too large {st.st_size} {st.st_mtime_ns}\0".encode()


# The exit code when the settings could not be checked at all (1 is: they hold a mistake).
CANNOT_CHECK = 3


def main(argv: list[str]) -> int:
    if argv[:1] == ["--hashes"] and len(argv) == 2:
        try:
            hashes = [f"{role} {role_hash(Path(argv[1]), role)}" for role in ROLE_FILES]
        except ImportError as e:
            return _cannot_load(e)
        print("\n".join(hashes))
        return 0
    containers = argv[:1] == ["--containers"]
    argv = argv[containers:]
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        problems = check(Path(argv[0]).absolute(), Path(argv[1]).absolute(), containers)
    except ImportError as e:
        return _cannot_load(e)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return 1 if problems else 0


def _cannot_load(e: ImportError) -> int:
    """The venv does not hold the roles' code (a clone moved since it was made, say): that is no
    mistake of the settings, and the owner is told what to do instead."""
    print(
        f"error: the settings cannot be checked: {sys.prefix} cannot load the roles' code"
        f" ({e}); run scripts/setup-dev (it makes the venv anew), then this again",
        file=sys.stderr,
    )
    return CANNOT_CHECK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
