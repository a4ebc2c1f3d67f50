"""scripts/stack logs ROLE N with N = 0: refused with the one line every count that is no count of
lines gets, never a silent exit 141 (tail -n 0 ends without reading, and the pipe that joins a
role's two log files died of SIGPIPE under pipefail). A process-mode state folder is enough: the
count is checked before any role is asked."""

import os
import subprocess

from tests.integration.stack import REPO


def test_logs_zero_is_refused_in_one_line(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "mode").write_text("process\n")
    # more than a pipe holds, so the writer is still writing when its reader is gone
    (state / "memoryd.log").write_text("".join(f"line {i}\n" for i in range(100_000)))
    env = {**os.environ, "BOXMAKER_STACK_STATE": str(state), "BOXMAKER_HOME": str(tmp_path)}
    shown = subprocess.run(
        [REPO / "scripts" / "stack", "logs", "memoryd", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 1 and shown.stdout == "", (shown.returncode, shown.stdout)
    assert shown.stderr.splitlines() == [
        "error: logs memoryd 0: N is a count of lines (a whole number, as in "
        "scripts/stack logs memoryd 200)"
    ]
    last = subprocess.run(
        [REPO / "scripts" / "stack", "logs", "memoryd", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert last.returncode == 0 and last.stdout == "line 99998\nline 99999\n", last.stderr
