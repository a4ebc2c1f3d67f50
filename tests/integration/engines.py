"""The container engines the tests can use, the limits compose.yaml sets, and conmon leftovers.

scripts/test serves podman's Docker API for testcontainers and says which engines it set up:

- rootful: DOCKER_HOST, root's own podman (only when the tests run as root);
- rootless: BOXMAKER_ROOTLESS_DOCKER_HOST, podman run by an unprivileged user. As root,
  scripts/setup-rootless creates that user (BOXMAKER_ROOTLESS_UID) and the temporary homes are
  given to it; BOXMAKER_ROOTLESS_PODMAN is the command that runs its podman (scripts/rootless-
  podman). As a user, it is that user's own podman.

Commands inside a container run with the podman CLI (`podman exec`), not the API: an API exec
session keeps its conmon alive for exit_command_delay (five minutes by default) after the command
ends, which left about a hundred conmon processes behind each run.
"""

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "compose.yaml"


@dataclass(frozen=True)
class Engine:
    name: str  # rootful | rootless
    docker_host: str
    podman: tuple[str, ...]  # the podman command for this engine
    rootless: bool
    host_uid: int  # who owns the home on the host (rootful: the image's 10001)

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self.podman, *args], capture_output=True, text=True, timeout=timeout
        )


def engine_problem(name: str) -> str | None:
    """Why the engine named name is not set up here, or None."""
    if name == "rootful":
        if os.getuid() != 0:
            return "rootful podman needs root; this run is rootless only"
        if not os.environ.get("DOCKER_HOST"):
            return "DOCKER_HOST is not set (scripts/test starts podman's API socket and sets it)"
    elif not os.environ.get("BOXMAKER_ROOTLESS_DOCKER_HOST"):
        return "BOXMAKER_ROOTLESS_DOCKER_HOST is not set (scripts/test sets up rootless podman)"
    return None


def engine(name: str) -> Engine:
    if name == "rootful":
        return Engine("rootful", os.environ["DOCKER_HOST"], ("podman",), False, 10001)
    podman = tuple(shlex.split(os.environ.get("BOXMAKER_ROOTLESS_PODMAN", "podman")))
    uid = int(os.environ.get("BOXMAKER_ROOTLESS_UID", os.getuid()))
    return Engine("rootless", os.environ["BOXMAKER_ROOTLESS_DOCKER_HOST"], podman, True, uid)


def compose_limits() -> dict[str, dict[str, int]]:
    """Each service's memory limit (bytes) and process limit, as compose.yaml has them."""
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    limits = {}
    for name, service in services.items():
        memory = str(service["mem_limit"]).lower()
        limits[name] = {
            "memory": int(memory[:-1]) * units[memory[-1]] if memory[-1] in units else int(memory),
            "pids": int(service["pids_limit"]),
        }
    return limits


def conmons_of(container_ids: set[str]) -> list[str]:
    """The command lines of conmon processes still running for any of these containers."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv or not argv[0].endswith(b"conmon"):
            continue
        words = [a.decode(errors="replace") for a in argv]
        if any(w in container_ids for w in words):
            found.append(f"pid {proc.name}: {' '.join(words)[:200]}")
    return found
