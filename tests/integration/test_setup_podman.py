"""scripts/setup-podman's line naming podman and its runtime is one line whatever podman prints on
stderr: rootless podman warns ('"/" is not a shared mount ...') on every `podman info`, and the
warning once landed inside the line, the runtime's name pushed onto the next. A podman stood in by
a script on PATH says what the real one said, so no engine is needed."""

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.stack import REPO

WARNING = 'time="2026-12-04T17:10:11Z" level=warning msg="\\"/\\" is not a shared mount"'


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def _setup_podman(tmp_path: Path, info: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "podman", f'case "$1" in info) {info} ;; version) echo 4.3.1 ;; esac')
    for name in ("runc", "mmdebstrap"):
        _fake(bin_dir, name, "exit 0")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("CONTAINERS_CONF", None)
    return subprocess.run(
        [REPO / "scripts/setup-podman"], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("warned", [True, False])
def test_the_runtime_line_is_one_line_and_a_warning_its_own(tmp_path, warned):
    info = (f"echo '{WARNING}' >&2; " if warned else "") + "echo runc"
    done = _setup_podman(tmp_path, info)
    assert done.returncode == 0, done.stderr
    conf = REPO / "deploy/containers.conf"
    lines = done.stderr.splitlines()
    assert f"podman 4.3.1 with runtime runc (CONTAINERS_CONF={conf})" in lines, lines
    warns = [line for line in lines if line.startswith("podman warns: ")]
    assert warns == ([f"podman warns: {WARNING}"] if warned else [])
    assert sum("level=warning" in line for line in lines) == (1 if warned else 0)


def test_a_podman_that_does_not_work_is_said_with_its_error(tmp_path):
    done = _setup_podman(tmp_path, "echo 'cannot connect to the service' >&2; exit 125")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-2:] == [
        "podman is installed but does not work here:",
        "cannot connect to the service",
    ]
