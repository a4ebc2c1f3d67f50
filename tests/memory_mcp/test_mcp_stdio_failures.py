"""A stdout that fails other than by the client closing it (a full disk), a stdin that cannot be
read (not open, not readable), end memory-mcp with one line in its log, never a traceback: a
stdout that cannot be written is exit status 1, a stdin that cannot be read is its end."""

import json
import os
import subprocess
import sys

from mcp_types.version import LATEST_HANDSHAKE_VERSION

from memory_mcp.cli import NO_STDIN

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "full disk", "version": "1"},
    },
}


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Exception ignored" not in err and "│" not in err, err


def test_a_stdout_on_a_full_disk_is_one_line_and_exit_1(tmp_path):
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [sys.executable, "-m", "memory_mcp", "--home", str(tmp_path)],
            input=(json.dumps(INITIALIZE) + "\n").encode(),
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            env=os.environ,
        )
    err = result.stderr.decode()
    _no_traceback(err)
    assert result.returncode == 1, err
    [line] = [x for x in err.splitlines() if "cannot write to stdout" in x]
    assert "No space left on device" in line and "the connection is over" in line


def test_a_closed_stdin_is_one_line_and_a_clean_end(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--home", str(tmp_path)],
        preexec_fn=lambda: os.close(0),  # as `memory-mcp <&-` starts it
        capture_output=True,
        timeout=60,
        env=os.environ,
    )
    err = result.stderr.decode()
    _no_traceback(err)
    assert result.returncode == 0, err
    assert err.strip() == NO_STDIN and result.stdout == b""


def test_a_stdin_that_cannot_be_read_is_its_end(tmp_path):
    write_only = os.open(tmp_path / "sink", os.O_WRONLY | os.O_CREAT)  # read() fails: EBADF
    try:
        result = subprocess.run(
            [sys.executable, "-m", "memory_mcp", "--home", str(tmp_path)],
            stdin=write_only,
            capture_output=True,
            timeout=60,
            env=os.environ,
        )
    finally:
        os.close(write_only)
    err = result.stderr.decode()
    _no_traceback(err)
    assert result.returncode == 0, err
    assert "stdin cannot be read (Bad file descriptor): taken as its end" in err


def test_with_stderr_closed_a_refusal_never_lands_on_stdout(tmp_path):
    for args in (["--trust", "bogus"], ["config-snippet", "--home", str(tmp_path / "gone")]):
        result = subprocess.run(
            [sys.executable, "-m", "memory_mcp", *args],
            preexec_fn=lambda: os.close(2),  # as `memory-mcp 2>&-` starts it
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            timeout=60,
            env=os.environ,
        )
        assert result.returncode == 2, args
        assert result.stdout == b"", (args, result.stdout)
    served = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--home", str(tmp_path), "--state", str(tmp_path)],
        preexec_fn=lambda: os.close(2),
        input=(json.dumps(INITIALIZE) + "\n").encode(),
        stdout=subprocess.PIPE,
        timeout=60,
        env=os.environ,
    )
    assert served.returncode == 0
    [answer] = served.stdout.splitlines()
    assert json.loads(answer)["id"] == 0
