"""bxctl memory restore stopped (Ctrl-C, SIGTERM, SIGHUP) once memoryd has restored the memory
files, while bxctl lays the archive's session logs or memoryd indexes them: the one line says what
stands (the memory restored, how many logs laid) and how the rest is laid, and doing what it says
(restore --replace of the same archive) lays the rest, the memory backed up first."""

import os
import signal
import subprocess
import sys

import pytest

from tests.bxctl.test_bxctl_data import fill
from tests.bxctl.test_restore_sessions import bx, homes, ok, say  # noqa: F401 (homes: a fixture)

LOGS = [f"s-day{i}" for i in range(5)]


# A real signal, sent by bxctl to itself once the second log is laid (or memoryd is first told
# of one): the point is the same on every run.
AT_THE_SECOND_LOG = """
import os, signal
from bxctl import sessionlay
write = sessionlay._write
def stopping(*args):
    why = write(*args)
    if sessionlay.LAYING.laid == 1:
        os.kill(os.getpid(), {sig})
    return why
sessionlay._write = stopping
"""
AT_THE_INDEXING = """
import os, signal
from bxctl import sessionrestore
def stopping(home, sessions):
    os.kill(os.getpid(), {sig})
sessionrestore.tell_memoryd = stopping
"""


def restore_stopped(memoryd, archive: str, prelude: str) -> tuple[int, str]:
    code = prelude + "\nfrom bxctl.cli import main; main()"
    env = {
        **os.environ,
        "BOXMAKER_HOME": str(memoryd.home),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    done = subprocess.run(
        [sys.executable, "-c", code, "memory", "restore", archive],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    return done.returncode, line


def backed_up(a, tmp_path) -> str:
    for i, session in enumerate(LOGS):
        say(a, session, f"On day {i} the owner planted kiwi{i} seedlings.")
    fill(a)
    copy = tmp_path / "saved.tar.gz"
    ok(bx(a, "memory", "backup", "--with-sessions", str(copy)))
    return str(copy)


def laid(memoryd) -> list[str]:
    return sorted(p.parent.name for p in (memoryd.home / "sessions").glob("*/0.jsonl"))


@pytest.mark.parametrize(
    ("sig", "how"), [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "stopped by SIGTERM")]
)
def test_stopped_while_laying_says_how_many_and_the_command_that_lays_the_rest(
    homes,  # noqa: F811 (the fixture imported above)
    tmp_path,
    sig,
    how,
):
    a, b = homes
    copy = backed_up(a, tmp_path)
    code, line = restore_stopped(b, copy, AT_THE_SECOND_LOG.format(sig=int(sig)))
    assert code == (130 if sig == signal.SIGINT else 128 + sig)
    assert line == (
        f"bxctl: {how} while laying session logs: memoryd restored the memory files; bxctl "
        "laid 2 of the 5 session logs the home lacked (memoryd's next start, or bxctl reindex, "
        f"indexes them); run bxctl memory restore --replace {copy} again to lay the rest "
        "(memoryd backs up the memory there first)"
    )
    assert len(laid(b)) == 2
    assert "Owner prefers UTC." in (b.home / "memory/memory.md").read_text()

    out = ok(bx(b, "memory", "restore", "--replace", copy))
    assert "bxctl laid 3 session logs into sessions/ (memoryd indexed them)" in out, out
    assert "2 already there kept as they are" in out and "what the home held before" in out
    assert laid(b) == LOGS
    for session in LOGS:
        log = f"sessions/{session}/0.jsonl"
        assert (b.home / log).read_bytes() == (a.home / log).read_bytes()
    assert "kiwi4 seedlings" in ok(bx(b, "memory", "search", "kiwi4"))
    # the two laid before the interrupt memoryd was never told of: its next start indexes them
    b.stop()
    b.start()
    for i in range(5):
        assert f"kiwi{i} seedlings" in ok(bx(b, "memory", "search", f"kiwi{i}"))


def test_stopped_while_memoryd_indexes_says_every_log_is_laid(homes, tmp_path):  # noqa: F811
    a, b = homes
    copy = backed_up(a, tmp_path)
    code, line = restore_stopped(b, copy, AT_THE_INDEXING.format(sig=int(signal.SIGINT)))
    assert code == 130
    assert line == (
        "bxctl: interrupted while memoryd indexed the session logs bxctl laid: memoryd restored "
        "the memory files and bxctl laid 5 session logs; memoryd's next start, or bxctl reindex, "
        "indexes any not indexed yet"
    )
    assert laid(b) == LOGS
    ok(bx(b, "reindex"))
    assert "kiwi2 seedlings" in ok(bx(b, "memory", "search", "kiwi2"))
