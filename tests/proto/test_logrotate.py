"""A role's log file kept bounded (proto/logrotate.py), run in a child process whose stderr is
the file, as scripts/stack starts a role without containers."""

import os
import subprocess
import sys

import pytest

from proto import logrotate

CHILD = """
import logging, sys
from proto.logline import configure_role
configure_role(rotate=True)
for n in range(int(sys.argv[1])):
    logging.getLogger("role").info("line %05d %s", n, "x" * 80)
print("printed after the lines")
"""


def run_role(tmp_path, lines: int, env: dict, stderr_to_log: bool = True) -> None:
    log = tmp_path / "role.log"
    elsewhere = tmp_path / "elsewhere.log"
    with open(log if stderr_to_log else elsewhere, "ab") as out:
        subprocess.run(
            [sys.executable, "-c", CHILD, str(lines)],
            env={**os.environ, **env},
            stdout=out,
            stderr=out,
            check=True,
            timeout=60,
        )


def test_a_full_log_is_moved_aside_and_the_latest_lines_stay(tmp_path):
    log = tmp_path / "role.log"
    env = {logrotate.FILE_ENV: str(log), logrotate.MAX_ENV: "8192"}
    run_role(tmp_path, 1000, env)  # about 130 KB of lines
    older = tmp_path / "role.log.1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["role.log", "role.log.1"]
    for path in (log, older):
        assert path.stat().st_size <= 8192 + 200
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    text = log.read_text()
    assert "line 00999" in text and text.endswith("printed after the lines\n")
    numbers = [int(line.split()[5]) for line in (older.read_text() + text).splitlines()[:-1]]
    assert numbers == list(range(numbers[0], 1000))  # the newest, in order, none lost between


@pytest.mark.parametrize(
    "env, stderr_to_log",
    [
        ({logrotate.MAX_ENV: "8192"}, True),  # no file named: stderr as it is
        ({logrotate.FILE_ENV: "LOG", logrotate.MAX_ENV: "8192"}, False),  # stderr elsewhere
    ],
)
def test_nothing_is_moved_unless_stderr_is_the_named_file(tmp_path, env, stderr_to_log):
    env = {k: str(tmp_path / "role.log") if v == "LOG" else v for k, v in env.items()}
    run_role(tmp_path, 300, env, stderr_to_log)
    assert not (tmp_path / "role.log.1").exists()
    grown = tmp_path / ("role.log" if stderr_to_log else "elsewhere.log")
    assert grown.stat().st_size > 30_000


def test_a_bound_that_is_not_a_number_or_too_small_is_not_taken():
    assert logrotate.handler_from_env({}) is None
    for given, taken in [("lots", logrotate.MAX_BYTES), ("10", logrotate.LEAST_BYTES)]:
        handler = logrotate.handler_from_env({logrotate.FILE_ENV: "/x", logrotate.MAX_ENV: given})
        assert handler is not None and handler.max_bytes == taken
