"""A bxctl killed (SIGKILL, a power cut) while it copies an archive into backups/ for memoryd to
restore must leave no part of the memory there in clear, where no forget reaches: the copy has
no name until it is whole (O_TMPFILE), and where the file system gives it a temporary name
instead, memoryd's next start removes it (as it removes the copies handed over), unless a
running bxctl holds backups/ while it hands one over."""

import fcntl
import os
import signal
import subprocess
import sys

from memoryd.data import backup
from memoryd.home import Home
from tests.bxctl.test_restore_interrupted import backed_up
from tests.bxctl.test_restore_sessions import homes  # noqa: F401 (a fixture)

KILLED_WHILE_COPYING = """
import os, shutil, signal
def dying(source, out, length=0):
    out.write(source.read(10))
    out.flush()
    os.kill(os.getpid(), signal.SIGKILL)
shutil.copyfileobj = dying
"""


def temporary(root) -> list[str]:
    return sorted(n for n in os.listdir(root / "backups") if n.startswith(".bxctl-"))


def test_a_killed_copy_leaves_nothing_in_backups(
    homes,  # noqa: F811 (the fixture imported above)
    tmp_path,
):
    a, b = homes
    copy = backed_up(a, tmp_path)
    env = {**os.environ, "BOXMAKER_HOME": str(b.home), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    code = KILLED_WHILE_COPYING + "\nfrom bxctl.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "memory", "restore", copy], env=env, timeout=120
    )
    assert done.returncode == -signal.SIGKILL
    assert sorted(n for n in os.listdir(b.home / "backups") if n.startswith(".")) == []
    b.stop()
    b.start()
    assert temporary(b.home) == []


def test_one_a_running_bxctl_may_still_write_is_left(tmp_path):
    home = Home(tmp_path)
    (tmp_path / "backups").mkdir(mode=0o700)
    (tmp_path / "backups" / ".bxctl-0123456789ab.tmp").write_text("part of an archive")
    (tmp_path / "backups" / ".bxctl-notes.tmp").write_text("the owner's")
    lock = os.open(tmp_path / "backups", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)  # as bxctl holds it while it hands a copy over
        backup.remove_all_leftovers(home)
        assert temporary(tmp_path) == [".bxctl-0123456789ab.tmp", ".bxctl-notes.tmp"]
    finally:
        os.close(lock)
    backup.remove_all_leftovers(home)
    assert temporary(tmp_path) == [".bxctl-notes.tmp"]
