"""memoryd with crash points: the same `memoryd serve`, killed with SIGKILL at the Nth point.

A crash point is a call to os.write, os.fsync or os.replace, or an SQLite COMMIT or executemany
(an insert batch inside a transaction). The wrapper counts them from the moment memoryd starts
serving (or from the first line of the process when MEMORYD_CRASH_FROM=start, to crash inside the
catch-up at start), and when the count reaches MEMORYD_CRASH_AT it kills its own process with
SIGKILL just before the call runs. With MEMORYD_CRASH_TORN=1, a crash at an os.write writes the
first half of the bytes first: a torn append.

MEMORYD_CRASH_AT unset or 0 crashes nowhere. MEMORYD_CRASH_TRACE names a file that gets one line
per point passed ("N kind file"), MEMORYD_CRASH_REPORT a file that gets the point it crashed at.
No service file is changed: the hooks are installed here, before memoryd.cli.main runs.

    python tests/reliability/crashing_memoryd.py serve --config PATH
"""

import os
import re
import signal
import sqlite3
import sys
import threading

_real_write = os.write
_real_fsync = os.fsync
_real_replace = os.replace
_real_connect = sqlite3.connect

CRASH_AT = int(os.environ.get("MEMORYD_CRASH_AT") or 0)
TORN = os.environ.get("MEMORYD_CRASH_TORN") == "1"
TRACE = os.environ.get("MEMORYD_CRASH_TRACE")
REPORT = os.environ.get("MEMORYD_CRASH_REPORT")

_TEMP = re.compile(r"\.[A-Za-z0-9_]+\.tmp$")
_STAMP = re.compile(r"\d{8}T\d{6}Z")  # a backup's name says when it was made
_STAGING = re.compile(r"^\.restore-[0-9a-f]{12}$")  # a restore's staging folder: a random name
_lock = threading.Lock()
_state = {"armed": os.environ.get("MEMORYD_CRASH_FROM") == "start", "count": 0}
_local = threading.local()


def _name_of_fd(fd: int) -> str:
    try:
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return f"fd{fd}"
    # A temporary file's random part would make the trace differ from run to run.
    return _plain(_TEMP.sub(".tmp", name))


def _plain(name: str) -> str:
    """A name the same from run to run: a time in it (a backup's), or a restore's staging folder,
    would not be."""
    return _STAGING.sub(".restore-STAGING", _STAMP.sub("STAMP", name))


def _note(path: str | None, line: str) -> None:
    if path is None:
        return
    _local.busy = True
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    finally:
        _local.busy = False


def point(kind: str, detail: str, before_kill=None) -> None:
    """Count one crash point; kill the process when it is the chosen one."""
    if not _state["armed"] or getattr(_local, "busy", False):
        return
    with _lock:
        _state["count"] += 1
        number = _state["count"]
        _note(TRACE, f"{number} {kind} {detail}")
        if number == CRASH_AT:
            _note(REPORT, f"{number} {kind} {detail}")
            if before_kill is not None:
                before_kill()
            os.kill(os.getpid(), signal.SIGKILL)


def write(fd, data):
    def torn() -> None:
        if TORN:
            _real_write(fd, bytes(data)[: len(data) // 2])

    point("write", _name_of_fd(fd), torn)
    return _real_write(fd, data)


def fsync(fd):
    number = fd if isinstance(fd, int) else fd.fileno()
    point("fsync", _name_of_fd(number))
    return _real_fsync(fd)


def replace(src, dst, **kwargs):
    point("replace", _plain(os.path.basename(os.fspath(dst))))
    return _real_replace(src, dst, **kwargs)


class CrashingConnection(sqlite3.Connection):
    def __init__(self, database, *args, **kwargs):
        super().__init__(database, *args, **kwargs)
        self.crash_name = os.path.basename(os.fspath(database))

    def execute(self, sql, *args):
        if isinstance(sql, str) and sql.strip().upper() == "COMMIT":
            point("commit", self.crash_name)
        return super().execute(sql, *args)

    def executemany(self, sql, *args):
        point("executemany", self.crash_name)
        return super().executemany(sql, *args)


def connect(*args, **kwargs):
    kwargs.setdefault("factory", CrashingConnection)
    return _real_connect(*args, **kwargs)


def install() -> None:
    os.write = write
    os.fsync = fsync
    os.replace = replace
    sqlite3.connect = connect


def main() -> None:
    install()
    from memoryd import cli

    serve = cli.run

    def armed_run(*args, **kwargs):
        _state["armed"] = True
        return serve(*args, **kwargs)

    cli.run = armed_run
    sys.argv[0] = "memoryd"
    cli.main()


if __name__ == "__main__":
    main()
