"""Every command prints the version of the package it belongs to, the one in pyproject.toml."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize("command", sorted(PROJECT["scripts"]))
def test_each_command_prints_the_package_version(command):
    done = subprocess.run(
        [str(Path(sys.executable).with_name(command)), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{command} {PROJECT['version']}\n"
    assert done.stderr == ""
