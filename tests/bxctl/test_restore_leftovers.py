"""A bxctl killed (SIGKILL, a power cut: no cleanup runs) while bxctl memory restore lays the
archive's session logs leaves a partial copy of a log in sessions/<ID>/. The next restore removes
it, whether it lays logs or not, and says so; one another bxctl is writing while it lays is left
alone."""

import fcntl
import os
import signal
import subprocess
import sys

from tests.bxctl.test_restore_interrupted import LOGS, backed_up, laid
from tests.bxctl.test_restore_sessions import bx, homes, ok  # noqa: F401 (homes: a fixture)

# Killed part way through writing the second log, as a power cut would stop it.
KILLED_AT_THE_SECOND_LOG = """
import os, signal
from bxctl import sessionlay
real = sessionlay.hash_of
def dying(source, out=None):
    if sessionlay.LAYING.laid == 1:
        os.write(out, source.read(10))
        os.kill(os.getpid(), signal.SIGKILL)
    return real(source, out)
sessionlay.hash_of = dying
"""


def restore_killed(memoryd, archive: str) -> None:
    code = KILLED_AT_THE_SECOND_LOG + "\nfrom bxctl.cli import main; main()"
    env = {
        **os.environ,
        "BOXMAKER_HOME": str(memoryd.home),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    done = subprocess.run(
        [sys.executable, "-c", code, "memory", "restore", archive],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL


def leftovers(memoryd) -> list[str]:
    return sorted(p.parent.name for p in (memoryd.home / "sessions").glob("*/.0.jsonl.*.tmp"))


def test_the_next_restore_removes_what_a_killed_one_left(homes, tmp_path):  # noqa: F811
    a, b = homes
    copy = backed_up(a, tmp_path)
    restore_killed(b, copy)
    assert len(leftovers(b)) == 1 and len(laid(b)) == 1

    out = ok(bx(b, "memory", "restore", "--replace", copy))
    assert "bxctl removed 1 partial session log a stopped restore left" in out, out
    assert leftovers(b) == []
    assert laid(b) == LOGS
    for session in LOGS:
        log = f"sessions/{session}/0.jsonl"
        assert (b.home / log).read_bytes() == (a.home / log).read_bytes()


def test_a_restore_of_an_archive_without_logs_removes_them_too(homes, tmp_path):  # noqa: F811
    a, b = homes
    copy = backed_up(a, tmp_path)
    restore_killed(b, copy)
    assert len(leftovers(b)) == 1
    plain = tmp_path / "plain.tar.gz"
    ok(bx(a, "memory", "backup", str(plain)))

    out = ok(bx(b, "memory", "restore", "--replace", str(plain)))
    assert "bxctl removed 1 partial session log a stopped restore left" in out, out
    assert leftovers(b) == []


def test_a_file_another_bxctl_is_laying_is_left(homes, tmp_path):  # noqa: F811
    a, b = homes
    copy = backed_up(a, tmp_path)
    restore_killed(b, copy)
    [session] = leftovers(b)
    fd = os.open(b.home / "sessions", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # as a bxctl laying logs holds it
        out = ok(bx(b, "memory", "restore", "--replace", copy))
        assert "partial session log" not in out
        assert leftovers(b) == [session]
    finally:
        os.close(fd)
    ok(bx(b, "memory", "restore", "--replace", copy))
    assert leftovers(b) == []


def test_the_folder_a_killed_restore_made_for_its_partial_copy_goes_with_it(
    homes,  # noqa: F811
    tmp_path,
):
    a, b = homes
    copy = backed_up(a, tmp_path)
    restore_killed(b, copy)
    [session] = leftovers(b)
    folder = b.home / "sessions" / session
    assert len(list(folder.iterdir())) == 1  # the partial copy alone
    plain = tmp_path / "plain.tar.gz"
    ok(bx(a, "memory", "backup", str(plain)))

    ok(bx(b, "memory", "restore", "--replace", str(plain)))
    # Nothing of that session is left: no empty folder for loopd to take for a session.
    assert not folder.exists()
    assert len(laid(b)) == 1 and (b.home / "sessions" / laid(b)[0] / "0.jsonl").is_file()
