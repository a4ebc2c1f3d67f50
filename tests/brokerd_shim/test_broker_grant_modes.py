"""A grant file brokerd-shim cannot read denies every call; making it readable (chmod, chown:
what the owner does for "cannot be read") changes neither its contents nor its mtime, and the
next call must be decided under the mended set, with no restart. The watcher runs in a child
that has no override of file permissions (as brokerd-shim in its container), so that a mode
keeps it out even where the tests run as root."""

import json
import os
import subprocess
import sys

import pytest

from tests.brokerd_shim.test_broker_grants import GOOD
from tests.memoryd.test_index_access import _drop_dac

WATCH = """
import json, sys
from pathlib import Path
from brokerd_shim.grants import GrantsWatcher
watcher = GrantsWatcher(Path(sys.argv[1]))
for _ in sys.stdin:
    got = watcher.current()
    print(json.dumps([got.valid, [g.id for g in got.grants], list(got.problems)]), flush=True)
"""


@pytest.fixture
def watcher(tmp_path):
    """(folder, ask): ask() is what a watcher in a child without permission overrides holds."""
    folder = tmp_path / "grants"
    folder.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", WATCH, os.fspath(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_drop_dac if os.geteuid() == 0 else None,
    )
    assert child.stdin is not None and child.stdout is not None

    def ask() -> list:
        child.stdin.write("\n")
        child.stdin.flush()
        return json.loads(child.stdout.readline())

    try:
        yield folder, ask
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def test_a_grant_made_readable_by_chmod_is_taken_at_the_next_call(watcher):
    folder, ask = watcher
    grant = folder / "web.toml"
    grant.write_text(GOOD)
    grant.chmod(0)
    valid, ids, problems = ask()
    if valid:
        pytest.skip("no way here to start a process that a file chmod 000 keeps out")
    assert problems == ["web.toml: cannot be read: Permission denied"], problems
    grant.chmod(0o600)
    assert ask() == [True, ["web"], []]
    # And back: taking the reading away is a change too.
    grant.chmod(0)
    valid, ids, problems = ask()
    assert not valid and problems == ["web.toml: cannot be read: Permission denied"], problems
