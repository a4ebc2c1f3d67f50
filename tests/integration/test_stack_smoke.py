"""The stack comes up in both modes: private sockets, the owner's CLI answers, a write travels.

In container mode it also checks what compose.yaml promises of each container: no network, no
capabilities, a read-only root, user 10001, and only its own folders of the home.
"""

import json
import os
import shutil
import stat

import pytest

from tests.integration.stack import MOUNTS

MEMORY_ADD = {"action": "add", "file": "user", "text": "Owner prefers answers in UTC."}


def test_every_socket_appears_private(stack):
    for name, path in stack.socket_paths().items():
        info = path.lstat()
        assert stat.S_ISSOCK(info.st_mode), f"{name}: {path} is not a socket"
        assert stat.S_IMODE(info.st_mode) == 0o600, f"{name}: {path} is {info.st_mode:o}"
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700, f"{name}: {path.parent}"


def test_bxctl_answers_from_the_host_and_where_memoryd_runs(stack):
    for result in (stack.bxctl("memory", "log"), stack.bxctl_inside("memory", "log")):
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip(), "bxctl memory log printed nothing"


def test_a_memory_write_goes_through_all_three_roles(stack):
    started = stack.driver("start", "--session", "smoke")
    assert started.returncode == 0, started.stderr
    said = stack.driver("say", "smoke", "Remember that I prefer answers in UTC.")
    assert said.returncode == 0, said.stderr
    answered = stack.driver("answer", "smoke", "--call", f"memory {json.dumps(MEMORY_ADD)}")
    assert answered.returncode == 0, answered.stderr
    assert "user.md updated" in answered.stdout

    for result in (stack.bxctl("memory", "log"), stack.bxctl_inside("memory", "log")):
        assert result.returncode == 0, result.stderr
        [line] = [line for line in result.stdout.splitlines() if " smoke " in f" {line} "]
        assert line.split()[-2:] == ["add", "user.md"]
    assert (stack.home / "sessions/smoke/0.jsonl").exists()
    assert MEMORY_ADD["text"] in (stack.home / "memory/user.md").read_text()


@pytest.fixture(
    params=[
        pytest.param("container", marks=pytest.mark.container),
        pytest.param("rootless", marks=pytest.mark.container),
    ]
)
def in_containers(request):
    yield request.getfixturevalue(f"{request.param}_stack")


def test_each_container_is_locked_down(in_containers):
    """Every role of one stack (a stack per engine: containers are slow to make under vfs)."""
    for role in sorted(MOUNTS):
        _check_locked_down(in_containers, role)


def _check_locked_down(stack, role):
    def run(*command):
        return stack.exec(role, *command)

    assert run("id", "-u").stdout.strip() == "10001", role
    assert run("ls", "/sys/class/net").stdout.split() == ["lo"], f"{role}: an interface besides lo"
    caps = dict(
        line.split(":\t")
        for line in run("cat", "/proc/self/status").stdout.splitlines()
        if line.startswith("Cap")
    )
    assert {caps[k] for k in ("CapEff", "CapPrm", "CapBnd")} == {"0000000000000000"}, role
    assert run("touch", "/etc/boxmaker/x").returncode != 0, f"{role}: the root is writable"

    home = "/var/lib/boxmaker"
    seen = set(run("ls", "-A", home).stdout.split()) | {
        f"run/{name}" for name in run("ls", "-A", f"{home}/run").stdout.split()
    }
    # loopd-shim's lock (two loopd-shims never serve one home) is a file of {home} itself, here
    # the container's own tmpfs: nothing of the host's home.
    own = set(MOUNTS[role]) | {"run"} | ({"loopd-shim.lock"} if role == "loopd-shim" else set())
    assert seen - {"run"} <= own, f"{role} sees {sorted(seen - own)}"
    for folder, mode in MOUNTS[role].items():
        wrote = run("touch", f"{home}/{folder}/.probe")
        assert (wrote.returncode == 0) == (mode == "rw"), f"{role}: {folder} should be {mode}"
        run("rm", "-f", f"{home}/{folder}/.probe")


def test_an_archive_and_an_export_kept_outside_the_home_come_back_in(stack, tmp_path):
    """The owner's copies live anywhere (another disk, a new machine): bxctl hands each to
    memoryd through backups/, as a file memoryd's user can read (under rootful podman bxctl runs
    as root and memoryd as 10001), and the answer names the owner's path, not the copy's."""
    assert stack.driver("start", "--session", "kept").returncode == 0
    wrote = stack.driver("answer", "kept", "--call", f"memory {json.dumps(MEMORY_ADD)}")
    assert "user.md updated" in wrote.stdout, wrote.stdout + wrote.stderr
    archive, export = tmp_path / "kept.tar.gz", tmp_path / "kept.jsonl"
    made = stack.bxctl("memory", "backup", os.fspath(archive))
    assert made.returncode == 0, made.stderr
    out = stack.bxctl("memory", "export", "--out", os.fspath(export))
    assert out.returncode == 0, out.stderr

    laid = stack.bxctl("memory", "restore", "--replace", os.fspath(archive))
    assert laid.returncode == 0, laid.stderr
    assert laid.stdout.startswith(f"restored {archive} "), laid.stdout
    assert ".incoming-" not in laid.stdout

    imported = stack.bxctl("memory", "import", "--dry-run", os.fspath(export))
    assert imported.returncode == 0, imported.stderr
    assert ".incoming-" not in imported.stdout + imported.stderr
    assert not [p for p in (stack.home / "backups").iterdir() if p.name.startswith(".incoming-")]


def test_a_restore_brings_back_a_session_log_the_home_lost_and_recall_finds_it(stack, tmp_path):
    """memoryd never writes sessions/ (loopd's): bxctl, on the host, lays the archive's logs as
    the user sessions/ belongs to (10001 under rootful podman, where bxctl runs as root), and
    memoryd indexes them at once."""
    said = "The key of the bicycle shed hangs behind the blue door."
    assert stack.driver("start", "--session", "lost").returncode == 0
    assert stack.driver("say", "lost", said).returncode == 0
    ended = stack.driver("answer", "lost", "Noted.")  # the turn ends: memoryd indexes it
    assert ended.returncode == 0, ended.stderr
    archive = tmp_path / "lost.tar.gz"
    made = stack.bxctl("memory", "backup", "--with-sessions", os.fspath(archive))
    assert made.returncode == 0, made.stderr
    shutil.rmtree(stack.home / "sessions/lost")
    assert stack.bxctl("reindex").returncode == 0  # the index forgets the log that went
    assert said not in stack.bxctl("memory", "search", "bicycle shed key").stdout

    laid = stack.bxctl("memory", "restore", "--replace", os.fspath(archive))
    assert laid.returncode == 0, laid.stderr
    assert "bxctl laid 1 session log into sessions/ (memoryd indexed it)" in laid.stdout, (
        laid.stdout
    )
    log, sessions = stack.home / "sessions/lost/0.jsonl", (stack.home / "sessions").stat()
    assert (log.stat().st_uid, log.parent.stat().st_uid) == (sessions.st_uid, sessions.st_uid)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    found = stack.bxctl("memory", "search", "bicycle shed key")
    assert said in found.stdout, found.stdout + found.stderr
