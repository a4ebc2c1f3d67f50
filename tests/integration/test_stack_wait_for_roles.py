"""scripts/converge.sh's wait_for_roles, on stand-ins for podman and the sockets: when several
roles cannot start, each gets its own line, one that fails a moment after another included (up
used to return at the first look that found any failure, and a role failing later got no line
and was left restarting)."""

import os
import subprocess

from tests.integration.stack import REPO

# Stand-ins: FAILS_AT names the look at which each role fails (none: it answers from look 1).
STANDINS = r"""
say() { printf '%s\n' "$*"; }
sockets_of() { echo "$1.sock"; }
restarts_of() { echo 0; }
stop_for_good() { echo "stop_for_good $1"; }
own_error() { echo "$1: cannot start: its own reason"; }
look() { cat "$STATE/look"; }
ask_sockets() {
    shift
    echo $(($(look) + 1)) >"$STATE/look"
    local sock
    for sock; do
        case " $FAILS_AT " in *" ${sock%.sock}="*) return 1 ;; esac
    done
}
has_failed() {
    local at
    at=$(printf '%s\n' $FAILS_AT | sed -n "s/^$1=//p")
    [ -n "$at" ] && [ "$(look)" -ge "$at" ]
}
"""


def wait(tmp_path, fails_at: str, limit: int = 20) -> subprocess.CompletedProcess:
    (tmp_path / "look").write_text("0\n")
    (tmp_path / "mode").write_text("container\n")
    script = (
        f". {REPO}/scripts/converge.sh\n{STANDINS}\n"
        "sleep() { :; }\n"
        f"wait_for_roles {limit} memoryd brokerd-shim loopd-shim\n"
    )
    env = {**os.environ, "STATE": os.fspath(tmp_path), "PROJECT": "p", "FAILS_AT": fails_at}
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60
    )


def test_a_role_that_fails_after_another_gets_its_own_line_too(tmp_path):
    done = wait(tmp_path, "brokerd-shim=1 loopd-shim=1 memoryd=4")
    assert done.returncode == 1, done.stdout + done.stderr
    for role in ("memoryd", "brokerd-shim", "loopd-shim"):
        assert f"{role}: cannot start: its own reason" in done.stdout, done.stdout
        assert f"stop_for_good p_{role}_1" in done.stdout, done.stdout
        assert f"stopped p_{role}_1 so that it does not restart in a loop" in done.stdout


def test_the_roles_that_answer_end_the_wait_once_the_others_failed(tmp_path):
    done = wait(tmp_path, "loopd-shim=2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("cannot start") == 1, done.stdout
    assert "no answer after" not in done.stdout


def test_every_role_answering_is_success(tmp_path):
    done = wait(tmp_path, "")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_in_process_mode_a_role_whose_process_died_fails_though_its_sockets_answer(tmp_path):
    # Another stack's roles answer on the sockets; the process started here died at its start.
    (tmp_path / "look").write_text("0\n")
    (tmp_path / "mode").write_text("process\n")
    script = (
        f". {REPO}/scripts/converge.sh\n{STANDINS}\n"
        'has_failed() { [ "$1" = memoryd ]; }\n'
        "wait_for_roles 20 memoryd brokerd-shim loopd-shim\n"
    )
    env = {**os.environ, "STATE": os.fspath(tmp_path), "PROJECT": "p", "FAILS_AT": ""}
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["memoryd: cannot start: its own reason"]
