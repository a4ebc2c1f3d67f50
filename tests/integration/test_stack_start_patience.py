"""How long `up` lets a running role's sockets stay silent before it counts as broken: what is
left of the 90 s it gives a start, never more. A start recorded by the wall clock is ahead of now
once the clock went back (a boot with the RTC a day fast, then NTP): the role is then taken as
just started (90 s), not given the jump to wait as well. In process mode the role's age is the
kernel's (its start ticks against /proc/uptime), which no clock step moves.

scripts/stack's start_patience is taken from the script as it is (the script cannot be sourced:
it runs), with scripts/processes.sh and scripts/converge.sh sourced whole."""

import os
import subprocess

import pytest

from tests.integration.stack import REPO

SCRIPTS = REPO / "scripts"


def _bash(tmp_path, body: str) -> str:
    script = (
        f". {SCRIPTS}/processes.sh\n. {SCRIPTS}/converge.sh\n"
        f"eval \"$(sed -n '/^start_patience() *{{/,/^}}/p' {SCRIPTS}/stack)\"\n"
        "sleep 30 & role=$!\n"  # stands for the running role
        'echo "$role" >"$STATE/memoryd.pid"\n'
        'started() { printf "since %s\\npid %s\\n" "$(date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ)" '
        '"$role" >"$STATE/memoryd.started"; }\n'
        f"{body}\n"
        'kill "$role"\n'
    )
    env = {**os.environ, "STATE": os.fspath(tmp_path), "PROJECT": "p"}
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and not done.stderr, done.stdout + done.stderr
    return done.stdout


@pytest.mark.skipif(not os.path.exists("/proc/uptime"), reason="needs /proc")
@pytest.mark.parametrize("since", ["+1 day", "-1 day", "now"])
def test_in_process_mode_the_age_is_the_kernels_whatever_the_record_says(tmp_path, since):
    said = _bash(tmp_path, f"started '{since}'; start_patience memoryd")
    assert 88 <= int(said) <= 90, said


@pytest.mark.parametrize(
    "since, low, high",
    [("+1 day", 90, 90), ("+1 year", 90, 90), ("-30 seconds", 55, 60), ("-200 seconds", 0, 0)],
)
def test_without_proc_a_start_recorded_ahead_counts_as_just_made(tmp_path, since, low, high):
    said = _bash(tmp_path, f"proc_age() {{ return 1; }}; started '{since}'; start_patience memoryd")
    assert low <= int(said) <= high, said


@pytest.mark.parametrize(
    "since, low, high",
    [("+1 day", 90, 90), ("+1 year", 90, 90), ("-30 seconds", 55, 60), ("-200 seconds", 0, 0)],
)
def test_a_container_started_ahead_of_now_counts_as_just_started(tmp_path, since, low, high):
    podman = f'podman() {{ date -d "{since}" +%s; }}'  # podman inspect's StartedAt.Unix
    said = _bash(tmp_path, f"{podman}; container_patience memoryd")
    assert low <= int(said) <= high, said


def test_proc_age_counts_from_the_process_start(tmp_path):
    said = _bash(tmp_path, 'proc_age "$role"; proc_age 1; cut -d. -f1 /proc/uptime')
    role, init, up = (int(n) for n in said.split())
    assert 0 <= role <= 2 and init <= up
