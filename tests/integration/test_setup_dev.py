"""scripts/setup-dev in a clone copied with another user's .venv inside: one sentence saying so
(whose it is and what to do), not pip's or venv's errors."""

import os
import shutil
import subprocess

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
