"""The daily backup's systemd units (scripts/systemd_unit.py --backup-dir), as scripts/stack
install writes them."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.memoryd.store_helpers import REPO

SCRIPT = REPO / "scripts" / "systemd_unit.py"


def write_units(folder, *extra):
    return subprocess.run(
        [sys.executable, os.fspath(SCRIPT), "--backup-dir", os.fspath(folder), *extra],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize("keep", [1, 7, 30])
def test_the_timer_runs_bxctl_backup_keeping_the_newest_n(tmp_path, keep):
    done = write_units(
        tmp_path,
        "--container", "boxmaker_memoryd_1",
        "--podman", "/usr/bin/podman",
        "--keep", str(keep),
        "--after", "container-boxmaker_memoryd_1.service",
        "--env", "CONTAINERS_CONF=/srv/x.conf",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    service = (tmp_path / "boxmaker-memory-backup.service").read_text()
    timer = (tmp_path / "boxmaker-memory-backup.timer").read_text()
    assert (
        f"ExecStart=/usr/bin/podman exec boxmaker_memoryd_1 bxctl memory backup --keep {keep}\n"
        in service
    )
    assert "After=container-boxmaker_memoryd_1.service" in service
    assert 'Environment="CONTAINERS_CONF=/srv/x.conf"' in service
    assert "Type=oneshot" in service
    assert "OnCalendar=daily" in timer and "Persistent=true" in timer
    assert "WantedBy=timers.target" in timer


@pytest.mark.parametrize("missing", ["--container", "--podman", "--keep"])
def test_the_backup_units_need_every_value(tmp_path, missing):
    values = {"--container": "c", "--podman": "/usr/bin/podman", "--keep": "3"}
    argv = [x for k, v in values.items() if k != missing for x in (k, v)]
    done = write_units(tmp_path, *argv)
    assert done.returncode == 2 and not list(tmp_path.iterdir())


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_backup_units_are_valid_for_systemd(tmp_path):
    assert write_units(tmp_path, "--container", "c", "--podman", "/bin/true", "--keep", "2")
    verified = subprocess.run(
        ["systemd-analyze", "verify", os.fspath(tmp_path / "boxmaker-memory-backup.timer")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [line for line in verified.stderr.splitlines() if "boxmaker-memory-backup" in line]
    assert problems == [], verified.stderr
