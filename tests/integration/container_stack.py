"""The stack in containers: one container per role from the built image, through testcontainers
against podman's Docker API (rootful or rootless, engines.py), as compose.yaml has it: no network,
no capabilities, a read-only root, user 10001, compose.yaml's memory and process limits (no swap
beyond the memory limit), the settings folder read-only at /etc/boxmaker, and only the role's own
folders of the home bind-mounted. Commands inside run with `podman exec`.
"""

import os
import shutil
import subprocess
from pathlib import Path

from tests.integration.engines import Engine, compose_limits
from tests.integration.stack import (
    CONFIG_OF,
    IMAGE,
    IMAGE_HOME,
    IMAGE_UID,
    MOUNTS,
    SERVICES,
    TMPFS,
    Stack,
    make_home,
    make_settings,
)

SETTINGS_MOUNT = "/etc/boxmaker"

# Every container the tests created, so that the end of the run can check no conmon is left.
CREATED_CONTAINERS: set[str] = set()


class ContainerStack(Stack):
    mode = "container"

    def __init__(
        self,
        root: Path,
        engine: Engine,
        image: str = IMAGE,
        settings: dict[str, str] | None = None,
    ):
        """settings: file name -> text written over the example settings (config/)."""
        self.root = root
        self.engine = engine
        self.home = make_home(root)
        self.settings = make_settings(root, settings)
        self.image = image
        self.containers: dict = {}
        if os.getuid() != engine.host_uid:
            # Rootful: the container's 10001 is 10001 on the host. Rootless run by root: the
            # rootless user's uid is mapped to 10001 (keep-id), so the home is that user's.
            os.chown(root, engine.host_uid, engine.host_uid)
            for top in (self.home, self.settings):
                for path in [top, *top.rglob("*")]:
                    os.chown(path, engine.host_uid, engine.host_uid)

    def _container(self, name: str):
        from testcontainers.core.container import DockerContainer

        limits = compose_limits()[name]
        container = DockerContainer(
            self.image,
            docker_client_kw={"environment": {"DOCKER_HOST": self.engine.docker_host}},
            command=[name, "serve", "--config", f"{SETTINGS_MOUNT}/{CONFIG_OF[name]}"],
            env={"BOXMAKER_HOME": IMAGE_HOME},
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            user=f"{IMAGE_UID}:{IMAGE_UID}",
            mem_limit=limits["memory"],
            memswap_limit=limits["memory"],
            pids_limit=limits["pids"],
            # Rootless: the engine maps its user to 10001 by default (userns keep-id in its
            # containers.conf; docker-py refuses any userns_mode but "host").
        )
        container.with_volume_mapping(os.fspath(self.settings), SETTINGS_MOUNT, "ro")
        for folder, mode in MOUNTS[name].items():
            container.with_volume_mapping(
                os.fspath(self.home / folder), f"{IMAGE_HOME}/{folder}", mode
            )
        container.tmpfs.update(TMPFS)
        return container

    def start_service(self, name: str) -> None:
        if name in self.containers:
            self.containers[name].get_wrapped_container().start()
            return
        self.containers[name] = self._container(name).start()
        CREATED_CONTAINERS.add(self.containers[name].get_wrapped_container().id)

    def kill_service(self, name: str) -> None:
        wrapped = self.containers[name].get_wrapped_container()
        wrapped.kill()
        wrapped.wait(timeout=30)

    def start(self) -> "ContainerStack":
        for name in SERVICES:
            self.start_service(name)
        return self

    def container_id(self, name: str) -> str:
        return self.containers[name].get_wrapped_container().id

    def exec(self, name: str, *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a command in a role's container, as its user, with `podman exec` (see engines)."""
        return self.engine.run("exec", self.container_id(name), *command, timeout=timeout)

    def bxctl_inside(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return self.exec("memoryd", "bxctl", *args, timeout=timeout)

    def logs(self) -> str:
        parts = []
        for name, container in self.containers.items():
            try:
                out, err = (part.decode(errors="replace") for part in container.get_logs())
                parts.append(f"--- {name}\n{out}{err}")
            except Exception as e:  # noqa: BLE001 - logs are for the failure message only
                parts.append(f"--- {name}: no logs ({e})")
        return "\n".join(parts)

    def stop(self) -> None:
        for container in self.containers.values():
            container.stop()
        self.containers.clear()
        shutil.rmtree(self.root, ignore_errors=True)
