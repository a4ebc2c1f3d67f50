"""scripts/setup-dev in a clone copied with another user's .venv inside: one sentence saying so
(whose it is and what to do), not pip's or venv's errors."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.integration.stack import REPO, short_temp_home

NOBODY = 65534


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run the script as another user")
def test_a_venv_of_another_user_is_named():
    tmp_path = short_temp_home("bx-venv-")  # pytest's own folders are root's alone
    try:
        run_as_another_user(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def run_as_another_user(tmp_path):
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copytree(REPO / "scripts", clone / "scripts")
    shutil.copy(REPO / "pyproject.toml", clone)
    (clone / ".venv/bin").mkdir(parents=True)  # root's, as copied
    for path in [tmp_path, clone, *clone.rglob("*")]:
        if ".venv" not in path.parts:
            os.chown(path, NOBODY, NOBODY)
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            os.fspath(clone / "scripts/setup-dev"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": os.fspath(tmp_path)},
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: {clone / '.venv'} belongs to root, not to you (nobody): it was made by another "
        f"user (copied with the clone?); remove it (as root: rm -rf {clone / '.venv'}) or clone "
        "afresh, then run this again"
    ]


PROBE = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "bx-moved-probe"
version = "0.1.0"
requires-python = ">=3.11"

[project.optional-dependencies]
test = []

[project.scripts]
bx-moved-probe = "bx_moved_probe:main"

[tool.setuptools]
packages = ["bx_moved_probe"]
"""


def test_a_venv_moved_with_its_clone_is_made_anew():
    """The owner renames the clone's folder: the venv's scripts and its editable install name
    the old place. setup-dev makes the venv anew, and what it installs runs from the new one."""
    tmp_path = short_temp_home("bx-moved-")
    try:
        first = tmp_path / "first"
        (first / "bx_moved_probe").mkdir(parents=True)
        shutil.copytree(REPO / "scripts", first / "scripts")
        (first / "pyproject.toml").write_text(PROBE)
        (first / "bx_moved_probe/__init__.py").write_text("def main():\n    print(__file__)\n")
        env = {k: v for k, v in os.environ.items() if k not in ("VENV", "PYTHONPATH")}
        env["PYTHON"] = sys.executable
        made = subprocess.run(
            [first / "scripts/setup-dev"], env=env, capture_output=True, text=True, timeout=300
        )
        assert made.returncode == 0, made.stderr
        moved = tmp_path / "moved"
        first.rename(moved)

        again = subprocess.run(
            [moved / "scripts/setup-dev"], env=env, capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr
        assert again.stderr.splitlines()[0] == (
            f"{moved / '.venv'} was made at {first / '.venv'} (the clone was moved or copied"
            " since): its scripts and the project's install name that place; making it anew"
        )
        probe = subprocess.run(
            [moved / ".venv/bin/bx-moved-probe"], capture_output=True, text=True, timeout=60
        )
        assert probe.stdout.strip() == os.fspath(moved / "bx_moved_probe/__init__.py")
        # Made where it is, it is left as it is from then on.
        last = subprocess.run(
            [moved / "scripts/setup-dev"], env=env, capture_output=True, text=True, timeout=300
        )
        assert last.stderr.splitlines() == [f"{moved / '.venv'} is up to date"], last.stderr
    finally:
        shutil.rmtree(tmp_path)
