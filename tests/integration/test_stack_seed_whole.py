"""scripts/stack seeds the settings folder and the home's grants and fixtures whole or not at all: a
write that fails (a full disk; here a file size limit of 0) leaves no empty file that a later run
would keep as the owner's, and the run after the cause is gone completes them. An empty file left
by an earlier scripts/stack's cut-short copy is copied again, saying so; an example grant the owner
removed stays removed. In process mode (`scripts/stack check`), no engine needed.
"""

import filecmp
import os
import subprocess

from tests.integration.stack import REPO

STACK = REPO / "scripts" / "stack"


def run(tmp_path, *, no_room: bool = False) -> subprocess.CompletedProcess:
    for name in ("home", "config"):  # named folders check fills; it makes none (a typo)
        (tmp_path / name).mkdir(exist_ok=True)
    env = {
        **os.environ,
        "BOXMAKER_HOME": os.fspath(tmp_path / "home"),
        "BOXMAKER_CONFIG": os.fspath(tmp_path / "config"),
        "BOXMAKER_STACK_STATE": os.fspath(tmp_path / "state"),
        "BOXMAKER_STACK": "process",
    }
    # A file size limit of 0 fails every write of a byte as a full disk does (EFBIG, not a signal).
    limit = "trap '' XFSZ; ulimit -f 0; " if no_room else ""
    return subprocess.run(
        ["bash", "-c", f'{limit}exec "$0" check', os.fspath(STACK)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def empties(*folders):
    return [
        p
        for f in folders
        if f.exists()
        for p in f.rglob("*")
        if p.is_file() and not p.stat().st_size
    ]


def test_a_failed_seed_leaves_no_empty_file_and_the_next_run_completes_it(tmp_path):
    home, config = tmp_path / "home", tmp_path / "config"
    failed = run(tmp_path, no_room=True)
    assert failed.returncode == 1, failed.stderr
    assert empties(home, config) == []
    assert "nothing was started" in failed.stderr, failed.stderr
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("grants/http_fetch.toml", "fixtures/index.toml"):
        assert filecmp.cmp(REPO / "config" / name, home / name, shallow=False), name
    for example in (REPO / "config").iterdir():
        if example.is_file():
            assert filecmp.cmp(example, config / example.name, shallow=False), example.name


def test_an_empty_copy_left_by_an_earlier_run_is_copied_again(tmp_path):
    home, config = tmp_path / "home", tmp_path / "config"
    assert run(tmp_path).returncode == 0
    # As an earlier scripts/stack left them on a full disk: cut short to nothing.
    for path in (
        home / "grants/http_fetch.toml",
        home / "fixtures/index.toml",
        config / "brokerd.toml",
    ):
        path.write_bytes(b"")
    mended = run(tmp_path)
    assert mended.returncode == 0, mended.stderr
    assert empties(home, config) == []
    assert "brokerd.toml was empty" in mended.stderr, mended.stderr
    assert "http_fetch.toml was empty" in mended.stderr, mended.stderr


def test_an_example_grant_the_owner_removed_stays_removed(tmp_path):
    home = tmp_path / "home"
    assert run(tmp_path).returncode == 0
    (home / "grants/http_fetch.toml").unlink()
    (home / "grants/mine.toml").write_text((REPO / "config/grants/http_fetch.toml").read_text())
    assert run(tmp_path).returncode == 0
    assert not (home / "grants/http_fetch.toml").exists()
