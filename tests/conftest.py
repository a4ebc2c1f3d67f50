"""Settings for the whole suite: hypothesis without per-example deadlines (a 2-core machine busy
with other tests would trip them), and derandomised where CI=true so a run there is repeatable.

Tests leave nothing behind. The run gets a temporary folder of its own (TMPDIR, and tempfile's
default, for this process and what it starts), so whatever a test or the program under test makes
with tempfile lands there; at the end, anything left in it fails the run, is listed and is removed.
pytest's own tmp_path folders stay where pytest keeps them (PYTEST_DEBUG_TEMPROOT) while the run
lasts: a passed test's goes at once (tmp_path_retention_policy), the run's goes at the end
(_pytest_run_folder_goes), and so does pytest-of-<user> once empty (pytest_unconfigure). Another
run's folder, going on at the same time, holds pytest's lock and is left alone. The run's own
temporary folder is 0711: the rootless test user's podman must reach the homes made inside it.

Tests that need recall mode hybrid import onnxruntime to decide whether to skip; its telemetry
client is turned off first (memoryd does the same before its own import, and
test_no_telemetry.py checks that in a process of its own, without this setting).
"""

import contextlib
import getpass
import os
import resource
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

os.environ["ORT_DISABLE_TELEMETRY"] = "1"

settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile(
    "ci" if os.environ.get("CI", "").lower() in ("true", "1", "yes") else "default"
)

_RUN_TEMP: Path | None = None


def pytest_configure(config):
    global _RUN_TEMP
    if _RUN_TEMP is not None or hasattr(config, "workerinput"):
        return
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    _RUN_TEMP = Path(tempfile.mkdtemp(prefix="bxtest-", dir=tempfile.gettempdir()))
    _RUN_TEMP.chmod(0o711)
    os.environ["TMPDIR"] = os.fspath(_RUN_TEMP)
    tempfile.tempdir = os.fspath(_RUN_TEMP)


@pytest.fixture(scope="session", autouse=True)
def _pytest_run_folder_goes(tmp_path_factory):
    """This run's folder of tmp_path folders goes when the tests are done (failed tests' folders
    too: their files are in the report)."""
    yield
    base = tmp_path_factory.getbasetemp()
    shutil.rmtree(base, ignore_errors=True)
    # pytest's per-user folder (pytest-of-<user>) holds only this run's unless another runs
    # beside it: once empty it goes too, so a run leaves nothing in /tmp.
    with contextlib.suppress(OSError):
        base.parent.rmdir()


def left_behind(folder: Path) -> list[str]:
    """What is in folder, sorted, at most 20 names (and how many more)."""
    names = sorted(entry.name for entry in folder.iterdir())
    return names[:20] + ([f"... and {len(names) - 20} more"] if len(names) > 20 else [])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test that plays a full disk with the file size limit (RLIMIT_FSIZE) has it lifted as
    soon as its body ends: pytest writes its report before the test's fixtures are torn down,
    and its output may be a file far larger than the limit (`scripts/test > log`)."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    try:
        return (yield)
    finally:
        if resource.getrlimit(resource.RLIMIT_FSIZE) != limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, limit)


def pytest_sessionfinish(session, exitstatus):
    """Anything the tests left in the run's temporary folder fails the run; the folder goes."""
    global _RUN_TEMP
    if _RUN_TEMP is None:
        return
    left = left_behind(_RUN_TEMP) if _RUN_TEMP.exists() else []
    if left:
        print(f"\nthe tests left {len(left)} entries in the temporary folder: {', '.join(left)}")
        session.exitstatus = 1
    shutil.rmtree(_RUN_TEMP, ignore_errors=True)
    _RUN_TEMP = None


def pytest_unconfigure(config):
    """pytest's folder of run folders (pytest-of-<user>) goes too once it is empty: the run's folder
    is gone (_pytest_run_folder_goes) but pytest keeps the folder that held it."""
    if hasattr(config, "workerinput"):
        return
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container): pytest's own fallback
        user = "unknown"
    root = Path(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir())
    with contextlib.suppress(OSError):  # not empty (another run going on), or already gone
        (root / f"pytest-of-{user}").rmdir()
