"""scripts/stack up in process mode converges as it does with containers: a role whose settings
(the files it reads from the settings folder) or code (services/ROLE, libs/proto) changed since it
started is restarted, with one line saying which and why; the others keep running, and `status`
says which role runs out of date until then.

The stack runs from a copy of the scripts and sources (with this venv, whose editable install
runs the checkout's code), so that a change of the copy's code stands for a `git pull`.
"""

import fcntl
import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from proto.answer import LINES_PER_WINDOW
from proto.client import RemoteError, request
from proto.frames import encode_frame
from proto.messages import MemoryAdmin
from proto.paths import BROKER_MEMORY_SOCKET, LOOP_MEMORY_SOCKET, OWNER_ADMIN_SOCKET
from tests.integration.stack import REPO, SERVICES, short_temp_home, venv_command
from tests.rawsocket import send_raw

COPIED = ("scripts", "services", "libs", "config", "pyproject.toml", "compose.yaml")


class CopiedStack:
    """scripts/stack of a copied tree in process mode, on its own home, settings and state."""

    def __init__(self):
        self.root = short_temp_home("bx-converge-")
        self.tree = self.root / "tree"
        ignore = shutil.ignore_patterns("__pycache__", ".local")
        for name in COPIED:
            source = REPO / name
            if source.is_dir():
                shutil.copytree(source, self.tree / name, ignore=ignore, symlinks=True)
            else:
                self.tree.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, self.tree / name)
        self.settings = self.root / "settings"
        self.state = self.root / "state"
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOXMAKER_")}
        self.env = {
            **env,
            "VENV": os.fspath(REPO / ".venv"),
            "BOXMAKER_HOME": os.fspath(self.root / "home"),
            "BOXMAKER_CONFIG": os.fspath(self.settings),
            "BOXMAKER_STACK_STATE": os.fspath(self.state),
            "BOXMAKER_STACK": "process",
        }

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.tree / "scripts/stack", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )

    def up(self) -> str:
        done = self.run("up")
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stderr

    def pids(self) -> dict[str, str]:
        return {name: (self.state / f"{name}.pid").read_text().strip() for name in SERVICES}

    def out_of_date(self) -> list[str]:
        status = self.run("status")
        assert status.returncode == 0, status.stdout + status.stderr
        return [line for line in status.stdout.splitlines() if ": out of date: " in line]


@pytest.fixture
def stack():
    made = CopiedStack()
    try:
        yield made
    finally:
        down = made.run("down")
        shutil.rmtree(made.root, ignore_errors=True)
    assert down.returncode == 0, down.stderr


def _saw_in_log(path: Path, text: str, limit: float = 30, either: Path | None = None) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for where in (path, either) if either else (path,):
            if where.exists() and text in where.read_text(errors="replace"):
                return True
        time.sleep(0.3)
    return False


def test_up_restarts_a_role_whose_settings_or_code_changed(stack):
    stack.up()
    first = stack.pids()
    again = stack.up()
    for name in SERVICES:
        assert f"{name} already runs (pid {first[name]})" in again, again
    assert stack.pids() == first
    assert stack.out_of_date() == []

    # The owner edits memoryd's settings: status says memoryd runs out of date, up restarts it.
    conf = stack.settings / "memoryd.toml"
    conf.write_text(conf.read_text() + '\n[recall]\nmode = "context"\n')
    said = f"its settings (memoryd.toml, soul.md in {stack.settings}) changed since it started"
    assert stack.out_of_date() == [f"memoryd: out of date: {said} (scripts/stack up restarts it)"]
    edited = stack.up()
    assert f"memoryd: {said}: restarting" in edited, edited
    now = stack.pids()
    assert now["memoryd"] != first["memoryd"]
    assert {n: now[n] for n in ("brokerd-shim", "loopd-shim")} == {
        n: first[n] for n in ("brokerd-shim", "loopd-shim")
    }
    assert _saw_in_log(stack.state / "memoryd.log", "recall mode context")

    # A pull changes loopd-shim's code: only loopd-shim is restarted.
    source = stack.tree / "services/loopd-shim/cli.py"
    source.write_text(source.read_text() + "# changed by a pull\n")
    said = "its code (services/loopd-shim, libs/proto, pyproject.toml) changed since it started"
    assert stack.out_of_date() == [
        f"loopd-shim: out of date: {said} (scripts/stack up restarts it)"
    ]
    pulled = stack.up()
    assert f"loopd-shim: {said}: restarting" in pulled, pulled
    after = stack.pids()
    assert after["loopd-shim"] != now["loopd-shim"]
    assert {n: after[n] for n in ("memoryd", "brokerd-shim")} == {
        n: now[n] for n in ("memoryd", "brokerd-shim")
    }

    status = stack.run("status")
    assert stack.out_of_date() == []
    for name in SERVICES:
        assert re.search(
            rf"^{name}: pid {after[name]}, runs \S+ since \S+, installed \S+$", status.stdout, re.M
        ), status.stdout


def test_a_role_started_without_a_record_is_restarted(stack):
    # Started by an earlier scripts/stack, which kept no record: what it runs is unknown.
    stack.up()
    first = stack.pids()
    (stack.state / "brokerd-shim.started").unlink()
    said = (
        "it was started by an earlier scripts/stack, which kept no record of its settings and code"
    )
    assert stack.out_of_date() == [
        f"brokerd-shim: out of date: {said} (scripts/stack up restarts it)"
    ]
    again = stack.up()
    assert f"brokerd-shim: {said}: restarting" in again, again
    assert stack.pids()["brokerd-shim"] != first["brokerd-shim"]
    assert stack.out_of_date() == []


def test_a_role_keeps_its_log_bounded_however_much_it_logs(stack):
    """Without containers each role writes .local/stack/ROLE.log, and a peer's bad requests each
    log a line (a few a second at most): a peer that never stops would fill the disk in time. The
    role moves a full log aside to ROLE.log.1 and goes on in a new ROLE.log: two files at most,
    the latest lines in ROLE.log."""
    bound = 8192
    stack.env["BOXMAKER_LOG_MAX_BYTES"] = str(bound)
    stack.up()
    home = stack.root / "home"
    sockets = [home / p for p in (LOOP_MEMORY_SOCKET, BROKER_MEMORY_SOCKET, OWNER_ADMIN_SOCKET)]
    unknown = encode_frame("no_such_kind", {"padding": "x" * 200})
    for _ in range(LINES_PER_WINDOW):
        for path in sockets:
            send_raw(path, unknown)  # "refused a request"
            send_raw(path, b"\xff" * 64)  # "refused a frame"
    log, older = stack.state / "memoryd.log", stack.state / "memoryd.log.1"
    assert _saw_in_log(older, "no_such_kind")
    longest = max(len(line) for line in older.read_bytes().splitlines(keepends=True))
    for path in (log, older):
        assert path.stat().st_size <= bound + longest, path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # A restarted memoryd appends to the same pair, still bounded, and serves.
    assert stack.run("restart", "memoryd").returncode == 0
    assert _saw_in_log(log, "listening", either=older)
    with pytest.raises(RemoteError):
        request(sockets[2], MemoryAdmin(command="stats", arg="{"), timeout=30)
    for path in (log, older):
        assert path.stat().st_size <= bound + longest, path
    assert sorted(p.name for p in stack.state.glob("memoryd.log*")) == [log.name, older.name]
    # `logs` shows the last lines across the two files (memoryd idle: its catch-up is done).
    assert _saw_in_log(log, "caught up", either=older)
    both = (older.read_text() + log.read_text()).splitlines()
    shown = stack.run("logs", "memoryd", str(len(log.read_text().splitlines()) + 5))
    assert (
        shown.returncode == 0
        and shown.stdout.splitlines() == both[-len(shown.stdout.splitlines()) :]
    )
    assert len(shown.stdout.splitlines()) == len(log.read_text().splitlines()) + 5
    # The owner removes ROLE.log while the role is idle: logs shows what ROLE.log.1 holds; a
    # FIFO there is named in one line, never read (the read would not end).
    last = older.read_text().splitlines()[-3:]
    log.unlink()
    shown = stack.run("logs", "memoryd", "3")
    assert shown.returncode == 0 and shown.stdout.splitlines() == last, shown.stderr
    os.mkfifo(log, 0o600)
    shown = stack.run("logs", "memoryd", "3")
    assert shown.returncode == 1 and f"{log} is not a regular file" in shown.stderr
    log.unlink()
    for count in ("many", "-5", "+3", "1e3"):  # a count, or one line saying so
        shown = stack.run("logs", "memoryd", count)
        assert shown.returncode == 1 and shown.stdout == "", shown.stdout
        assert shown.stderr.splitlines() == [
            f"error: logs memoryd {count}: N is a count of lines (a whole number, as in "
            "scripts/stack logs memoryd 200)"
        ]


def test_settings_an_editor_began_with_a_byte_order_mark_restart_the_role(stack):
    stack.up()
    first = stack.pids()
    # Notepad saves UTF-8 with a byte-order mark; the roles read such a file, so the copy the
    # process stack makes of it must too, and restart must not stop a role it cannot start again.
    conf = stack.settings / "memoryd.toml"
    conf.write_bytes(b"\xef\xbb\xbf" + conf.read_bytes())
    assert stack.run("check").returncode == 0
    restarted = stack.run("restart", "memoryd")
    assert restarted.returncode == 0, restarted.stderr
    assert "Traceback" not in restarted.stderr
    now = stack.pids()
    assert now["memoryd"] != first["memoryd"]
    assert stack.out_of_date() == []


def _memoryd_pids(stack: CopiedStack) -> set[str]:
    conf = os.fspath(stack.state / "config" / "memoryd.toml")
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in args and conf.encode() in args and any(b"memoryd" in a for a in args):
            found.add(entry.name)
    return found


def test_two_ups_at_once_start_each_role_once(stack):
    # The boot unit and the owner may run up at the same moment: the second waits for the first,
    # then finds every role running, so no role is left running outside its pid file.
    first = subprocess.Popen(
        [stack.tree / "scripts/stack", "up"],
        env=stack.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    lock = stack.state / "stack.lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lock.exists() and subprocess.run(["flock", "-n", lock, "true"]).returncode != 0:
            break
        time.sleep(0.05)
    second = stack.run("up")
    _, said = first.communicate(timeout=300)
    assert first.returncode == 0, said[-3000:]
    assert second.returncode == 0, second.stderr[-3000:]
    assert "waiting for it to end" in second.stderr
    pids = stack.pids()
    for name in SERVICES:
        assert f"{name} already runs (pid {pids[name]})" in second.stderr, second.stderr
    assert _memoryd_pids(stack) == {pids["memoryd"]}


def test_up_from_another_state_folder_on_a_served_home_says_so_and_starts_nothing(stack):
    stack.up()
    other = {**stack.env, "BOXMAKER_STACK_STATE": os.fspath(stack.root / "other-state")}
    done = subprocess.run(
        [stack.tree / "scripts/stack", "up"],
        env=other,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    pid = stack.pids()["memoryd"]
    assert f"error: another memoryd (pid {pid}) already runs on " in done.stderr, done.stderr
    assert "started memoryd" not in done.stderr and "The stack is up" not in done.stdout
    assert not list((stack.root / "other-state").glob("*.pid"))


def test_a_state_folder_the_lock_cannot_be_written_in_is_said_in_one_line(stack):
    # Not "another command runs", nor a hang: the lock file cannot be opened (here a folder
    # stands at its name; a FIFO, a read-only or foreign state folder alike). up refuses in one
    # line; down still stops the roles.
    stack.up()
    pids = stack.pids()
    (stack.state / "stack.lock").unlink()
    (stack.state / "stack.lock").mkdir()
    up = stack.run("up")
    assert up.returncode == 1 and "another scripts/stack" not in up.stderr
    assert up.stderr.splitlines() == [
        f"error: {stack.state}/stack.lock is not a regular file: remove it (the stack makes its "
        "lock anew), then run this again"
    ]
    down = stack.run("down")
    assert down.returncode == 0, down.stderr
    assert "another scripts/stack" not in down.stderr
    assert not any(_runs(pid) for pid in pids.values())
    (stack.state / "stack.lock").rmdir()


def _runs(pid: str) -> bool:
    """The process runs (a zombie waiting for its parent to read its end does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_down_stops_the_roles_when_the_home_folder_is_gone(stack):
    # A removable disk unmounted, a folder renamed: down stops what the pid files name, and makes
    # no new empty home where the old one was.
    stack.up()
    pids = stack.pids()
    home = stack.root / "home"
    home.rename(stack.root / "moved")
    try:
        down = stack.run("down")
        assert down.returncode == 0, down.stderr
        assert not any(_runs(pid) for pid in pids.values())
        assert not home.exists()
    finally:
        (stack.root / "moved").rename(home)


def test_up_names_a_program_that_is_not_memoryd_holding_the_homes_lock(stack):
    stack.up()
    assert stack.run("down").returncode == 0
    home = stack.root / "home"
    held = os.open(home, os.O_RDONLY | os.O_DIRECTORY)  # this test is the other program
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        up = stack.run("up")
        assert up.returncode == 1
        said = up.stderr.splitlines()[-1]
        head = f"error: the home folder {home} is locked by another program (pid {os.getpid()}: "
        assert said.startswith(head) and "another memoryd" not in said, said
        assert said.endswith(
            "and memoryd takes that lock to run; end that program, then scripts/stack up"
        )
    finally:
        os.close(held)


def test_up_restart_and_check_leave_a_home_already_private_untouched(stack):
    """chmod and chown move a file's ctime even when they change nothing, and memoryd takes a
    notes.md whose ctime moved for one edited by hand: read again whole, with a warning, at every
    restart. A home whose modes are right already is left as it is; one that is not is mended."""
    stack.up()
    home = Path(stack.env["BOXMAKER_HOME"])
    driver = [venv_command("loopd-shim")]
    env = {**stack.env, "PATH": f"{REPO / '.venv/bin'}:{os.environ['PATH']}"}

    def drive(*args: str) -> str:
        done = subprocess.run([*driver, *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    session = drive("start").strip()
    drive("answer", session, "--call", 'http_fetch {"url":"https://example.org/notes"}')
    said = drive(
        "answer", session, "--call", 'memory {"action":"add","file":"memory","text":"Kites."}'
    )
    assert "saved as a note" in said
    notes_md = home / "memory/notes.md"
    before = {notes_md: notes_md.stat().st_ctime_ns}
    time.sleep(0.05)
    assert stack.run("check").returncode == 0
    restarted = stack.run("restart", "memoryd")
    assert restarted.returncode == 0, restarted.stderr
    assert _saw_in_log(stack.state / "memoryd.log", "caught up")
    assert notes_md.stat().st_ctime_ns == before[notes_md]
    log = (stack.state / "memoryd.log").read_text(errors="replace")
    assert "changed outside memoryd" not in log

    # A file or folder that is not private, or that its owner cannot reach, is still mended.
    notes_md.chmod(0o644)
    (home / "memory").chmod(0o600)
    assert stack.run("check").returncode == 0
    assert stat.S_IMODE(notes_md.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "memory").stat().st_mode) == 0o700
