"""scripts/stack in process mode on the owner's second day, when things around the stack went
wrong: a pid file left from before a reboot names another program now (never reported as the role
nor signalled; up starts the role), a socket removed while its role runs (status says the role
is unhealthy and how to mend it; up restarts it, saying why), a home it cannot chmod (one line;
check passes on valid settings; restart and up never stop a role that could not start again),
and install, which in process mode writes a unit that runs `scripts/stack up` at boot and the
daily backup's timer (uninstall removes them).
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.stack import REPO, SERVICES, short_temp_home

STACK = REPO / "scripts" / "stack"
VENV = REPO / ".venv"


class OwnerStack:
    """scripts/stack of this checkout in process mode, on its own home, settings and state."""

    def __init__(self):
        self.root = short_temp_home("bx-owner-")
        self.home = self.root / "home"
        self.state = self.root / "state"
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOXMAKER_")}
        env.pop("VENV", None)
        self.env = {
            **env,
            "BOXMAKER_HOME": os.fspath(self.home),
            "BOXMAKER_CONFIG": os.fspath(self.root / "settings"),
            "BOXMAKER_STACK_STATE": os.fspath(self.state),
            "BOXMAKER_STACK": "process",
            "BOXMAKER_UNIT_DIR": os.fspath(self.root / "units"),
        }

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [STACK, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def bxctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [VENV / "bin" / "bxctl", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def pid(self, name: str) -> int:
        return int((self.state / f"{name}.pid").read_text())


@pytest.fixture
def owner():
    made = OwnerStack()
    try:
        yield made
    finally:
        down = made.run("down")
        shutil.rmtree(made.root, ignore_errors=True)
    assert down.returncode == 0, down.stderr


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("record", ["marked", "unmarked"])
def test_a_pid_file_left_from_before_a_reboot_is_never_trusted(owner, record):
    assert owner.run("up").returncode == 0
    # The machine goes down: the roles end without scripts/stack down, the pid files stay.
    for name in SERVICES:
        os.kill(owner.pid(name), signal.SIGKILL)
    for name in SERVICES:
        deadline = time.monotonic() + 10
        while _alive(owner.pid(name)) and time.monotonic() < deadline:
            time.sleep(0.05)
    # Another program of the owner's now has memoryd's old pid.
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        (owner.state / "memoryd.pid").write_text(f"{other.pid}\n")
        if record == "unmarked":  # a record kept by an earlier scripts/stack
            started = owner.state / "memoryd.started"
            lines = started.read_text().splitlines()
            started.write_text("".join(f"{x}\n" for x in lines if not x.startswith("proc ")))
        status = owner.run("status")
        assert status.returncode == 1
        said = (
            f"its pid file {owner.state}/memoryd.pid names pid {other.pid}, which is another"
            " program now (the pid file is left from before a reboot or a crash); that program is"
            " not signalled"
        )
        assert f"memoryd: not running; {said}" in status.stdout.splitlines(), status.stdout
        assert f"pid {other.pid}, runs" not in status.stdout

        # restart and up start memoryd, and leave the other program alone.
        restart = owner.run("restart", "memoryd")
        assert restart.returncode == 0, restart.stderr[-2000:]
        assert f"memoryd is not running: {said}" in restart.stderr.splitlines()
        assert owner.pid("memoryd") != other.pid
        up = owner.run("up")
        assert up.returncode == 0, up.stderr[-2000:]
        assert f"memoryd already runs (pid {owner.pid('memoryd')})" in up.stderr
        assert owner.bxctl("memory", "log").returncode == 0
        assert owner.run("status").returncode == 0
        assert other.poll() is None and _alive(other.pid)

        # Again, and down: it stops the shims, and not the other program.
        os.kill(owner.pid("memoryd"), signal.SIGKILL)
        (owner.state / "memoryd.pid").write_text(f"{other.pid}\n")
        down = owner.run("down")
        assert down.returncode == 0
        assert f"memoryd was not running: {said}" in down.stderr.splitlines(), down.stderr
        time.sleep(0.3)
        assert other.poll() is None and _alive(other.pid)
    finally:
        other.kill()
        other.wait()


def test_a_socket_removed_while_its_role_runs_is_unhealthy_and_up_restarts_the_role(owner):
    assert owner.run("up").returncode == 0
    first = owner.pid("memoryd")
    admin = owner.home / "run/owner-memory/admin.sock"
    admin.unlink()
    assert owner.bxctl("memory", "log").returncode != 0
    status = owner.run("status")
    assert status.returncode == 1
    assert (
        f"memoryd: unhealthy: nothing answers on {admin}: No such file or directory: bxctl and"
        " memory-mcp cannot reach memoryd (scripts/stack restart memoryd makes it anew)"
    ) in status.stdout.splitlines(), status.stdout

    up = owner.run("up", timeout=120)
    assert up.returncode == 0, up.stderr[-2000:]
    assert f"memoryd: nothing answers on {admin}" in up.stderr
    assert "cannot reach memoryd: restarting" in up.stderr
    assert owner.pid("memoryd") != first
    assert owner.bxctl("memory", "log").returncode == 0
    assert owner.run("status").returncode == 0

    # A shim's one socket too.
    control = owner.home / "run/loop-control/control.sock"
    control.unlink()
    status = owner.run("status")
    assert status.returncode == 1
    assert f"loopd-shim: unhealthy: nothing answers on {control}" in status.stdout


def _read_only(folder: Path) -> bool:
    """folder bind-mounted on itself read-only; False where this cannot mount (not root)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    if subprocess.run(["mount", "--bind", folder, folder], capture_output=True).returncode != 0:
        return False
    done = subprocess.run(["mount", "-o", "remount,ro,bind", folder], capture_output=True)
    if done.returncode != 0:
        subprocess.run(["umount", folder], capture_output=True)
        return False
    return True


def test_a_read_only_memory_folder_is_one_line_and_nothing_is_stopped(owner):
    assert owner.run("up").returncode == 0
    memory = owner.home / "memory"
    first = owner.pid("memoryd")
    if not _read_only(memory):
        pytest.skip("a read-only bind mount needs root and mount")
    try:
        check = owner.run("check")
        assert check.returncode == 0, check.stderr
        lines = check.stderr.splitlines()
        assert not [line for line in lines if line.startswith("chmod:")], lines
        warning = [line for line in lines if line.startswith("warning:")]
        assert len(warning) == 1, lines
        assert f"cannot make the home {owner.home} private to you: {memory}" in warning[0]
        assert "Read-only file system" in warning[0] and "remount it read-write" in warning[0]
        assert lines[-1].startswith("the settings in ")

        restart = owner.run("restart", "memoryd")
        assert restart.returncode == 1
        assert restart.stderr.splitlines()[-1] == (
            f"error: memoryd is not restarted, since it could not start again: {memory} is on a"
            f" read-only file system (remount it read-write); it goes on running (pid {first}) as"
            " it was; fix that, then scripts/stack restart memoryd"
        )
        assert owner.pid("memoryd") == first and _alive(first)
        assert owner.bxctl("memory", "stats").returncode == 0

        # A settings edit: up would restart memoryd, but leaves it running as it was.
        conf = owner.root / "settings" / "memoryd.toml"
        conf.write_text(conf.read_text() + "\n# edited\n")
        up = owner.run("up")
        assert up.returncode == 1
        assert "memoryd: its settings" in up.stderr
        assert "but it is not restarted, since it could not start again" in up.stderr
        assert owner.pid("memoryd") == first and _alive(first)
    finally:
        subprocess.run(["umount", memory], capture_output=True)


def test_install_in_process_mode_starts_the_stack_at_boot_and_backs_up_daily(owner):
    owner.env["BOXMAKER_BACKUPS_KEEP"] = "5"
    install = owner.run("install")
    assert install.returncode == 0, install.stderr
    units = owner.root / "units"
    names = ["boxmaker-memory-backup.service", "boxmaker-memory-backup.timer"]
    names.append("boxmaker-stack.service")
    assert sorted(p.name for p in units.iterdir()) == names
    stack = (units / "boxmaker-stack.service").read_text()
    assert f'ExecStart="{STACK}" up' in stack and f'ExecStop="{STACK}" down' in stack
    for name in ("BOXMAKER_HOME", "BOXMAKER_CONFIG", "BOXMAKER_STACK_STATE"):
        assert f'Environment="{name}={owner.env[name]}"' in stack
    assert 'Environment="BOXMAKER_STACK=process"' in stack
    backup = (units / "boxmaker-memory-backup.service").read_text()
    assert f'ExecStart="{VENV}/bin/bxctl" memory backup --keep 5' in backup
    assert f'Environment="BOXMAKER_HOME={owner.home}"' in backup
    assert "OnCalendar=daily" in (units / "boxmaker-memory-backup.timer").read_text()
    if shutil.which("systemd-analyze"):  # reads the units offline: no running systemd needed
        verified = subprocess.run(
            ["systemd-analyze", "verify", *(f"./{name}" for name in names)],
            cwd=units,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verified.returncode == 0 and not verified.stderr, verified.stderr

    # What the units run works: the stack's ExecStart, then the backup's.
    assert owner.run("up").returncode == 0
    made = owner.bxctl("memory", "backup", "--keep", "5")
    assert made.returncode == 0, made.stderr
    assert list((owner.home / "backups").iterdir())

    uninstall = owner.run("uninstall")
    assert uninstall.returncode == 0
    assert list(units.iterdir()) == []
    assert f"removed {units}/boxmaker-stack.service" in uninstall.stderr


@pytest.mark.parametrize("keep", ["1001", "5000", "0", "7x"])
def test_install_refuses_a_keep_the_daily_backup_would_refuse(owner, keep):
    """The timer runs `bxctl memory backup --keep N`, which takes 1 to 1000: a keep it refuses
    would fail every day where no one looks, and no backup would ever be made."""
    owner.env["BOXMAKER_BACKUPS_KEEP"] = keep
    install = owner.run("install")
    assert install.returncode == 1
    [line] = install.stderr.splitlines()
    assert line.startswith(f"error: BOXMAKER_BACKUPS_KEEP={keep}: "), line
    assert line.endswith("; no unit was written"), line
    if keep in ("1001", "5000"):
        assert "Input should be less than or equal to 1000" in line, line
    units = owner.root / "units"
    assert not units.exists() or list(units.iterdir()) == []


def test_the_container_backup_unit_refuses_a_keep_bxctl_refuses(tmp_path):
    sys.path.insert(0, os.fspath(REPO / "scripts"))
    from systemd_unit import main

    common = ["--backup-dir", os.fspath(tmp_path), "--container", "c", "--podman", "podman"]
    assert main([*common, "--keep", "1001"]) == 2
    assert list(tmp_path.iterdir()) == []
    assert main([*common, "--keep", "1000"]) == 0
    assert "--keep 1000" in (tmp_path / "boxmaker-memory-backup.service").read_text()


def test_an_argument_a_command_does_not_take_is_one_line_and_nothing_is_done(owner):
    assert owner.run("up").returncode == 0
    pids = {name: owner.pid(name) for name in SERVICES}
    down = owner.run("down", "memoryd")
    assert down.returncode == 1
    assert down.stderr.splitlines() == [
        "error: down takes no role (it stops the whole stack), and nothing was stopped; to"
        " restart one role: scripts/stack restart memoryd"
    ]
    usage = "usage: scripts/stack up|check|down|status|logs ROLE [N]|restart ROLE|install|uninstall"
    for args, said in [
        (("down", "now"), "down takes no argument, and 'now' was given; nothing was stopped"),
        (("up", "memoryd"), "up takes no argument, and 'memoryd' was given; nothing was done"),
        (("status", "memoryd"), "status takes no argument, and 'memoryd' was given"),
        (("check", "x"), "check takes no argument, and 'x' was given; nothing was done"),
        (("install", "x"), "install takes no argument, and 'x' was given; nothing was done"),
        (("restart", "memoryd", "loopd-shim"), "restart takes one role, and 'loopd-shim' was"),
        (("logs", "memoryd", "2", "x"), "logs takes a role and a count of lines, and 'x' was"),
    ]:
        done = owner.run(*args)
        assert done.returncode == 1, args
        [line] = done.stderr.splitlines()
        assert line.startswith(f"error: {said}") and line.endswith(f"({usage})"), line
    assert {name: owner.pid(name) for name in SERVICES} == pids
    assert all(_alive(pid) for pid in pids.values())
    assert not (owner.root / "units").exists()
