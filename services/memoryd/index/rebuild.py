"""A reindex's build in a process of its own, so that memoryd's interpreter stays free to serve.

Building a new index from sessions/ parses every record in Python. On one of memoryd's threads that
holds the interpreter lock nearly all the time, and each step of a memory_block request waits for
it (up to the 5 ms switch interval a step): the block's p99 during a reindex of a million records
was 15 ms on a quiet machine and 40 ms on a busy one. The build touches nothing but
index/memory.sqlite3.new (newindex.py), so memoryd runs it as `python -m memoryd.index.rebuild` with
the home, the mode and the settings on the command line. The child writes its log lines to the
same stderr in the same format and prints its counts as one JSON line; memoryd then catches the
new file up and swaps it in on its writer thread, as before.

A child that fails, is killed or prints no counts fails the reindex (RebuildFailed, the old index
untouched), and memoryd removes what the child wrote (discard()) as soon as the child is gone,
whatever way it ended: a build that failed on a full disk must give the disk back at once, or
every later write is refused until a restart. A catch-up or swap that fails on the writer after
the build removes the new file too (finish_or_discard). memoryd stops a child still running when
it stops itself. A child never outlives memoryd, even one killed with SIGKILL: its
stdin is a pipe that memoryd never writes to, and the child exits as soon as that pipe ends, so no
orphan goes on writing memory.sqlite3.new beside the next memoryd's own build.
"""

import argparse
import contextlib
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.errors import MemorydError, NotSynced, RebuildFailed
from memoryd.home import Home
from memoryd.index import forgetsmeanwhile, newindex
from memoryd.index.dbfile import in_the_way, unwritable
from memoryd.index.indexer import Settings
from memoryd.index.newindex import Rebuilt
from proto.logline import configure_role

if TYPE_CHECKING:
    from memoryd.index.index import Index

log = logging.getLogger(__name__)

# What is kept of the child's stdout (its last line holds the counts).
OUTPUT_KEPT = 65_536
FAILED = "the reindex failed and the index is as it was; memoryd's log says why"
STOPPED = "the reindex was stopped because memoryd is stopping; the index is as it was"


class Rebuilder:
    """Runs one build at a time in a child process; stop() ends a build in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: subprocess.Popen | None = None
        self._stopped = False

    def build(self, index: "Index") -> Rebuilt:
        """Build index.new_path in a child process (blocking: run it on a thread of its own).
        When the build fails, nothing it wrote is left behind. Refused before it starts when
        something memoryd may not remove stands where the swap would have to (dbfile.in_the_way)."""
        in_the_way(index.path)
        forgetsmeanwhile.began(index)  # what the child's build leaves out itself
        try:
            return self._build(index)
        except BaseException:
            discard(index.new_path)
            raise

    def _build(self, index: "Index") -> Rebuilt:
        command = [sys.executable, "-m", "memoryd.index.rebuild", *arguments(index)]
        # The child imports memoryd as this process does, wherever that came from.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        with self._lock:
            if self._stopped:
                raise RebuildFailed(STOPPED)
            # stdin stays open, unwritten, until this process ends (see the module docstring).
            try:
                self._child = subprocess.Popen(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
                )
            except OSError as e:  # no process to be had (a limit on processes or files)
                log.error("index %s: the reindex's build cannot start: %s", index.new_path, e)
                raise RebuildFailed(FAILED) from None
        child = self._child
        try:
            out = b""
            while chunk := child.stdout.read(OUTPUT_KEPT) if child.stdout is not None else b"":
                out = (out + chunk)[-OUTPUT_KEPT:]  # the counts are the last line
            child.wait()
        finally:
            # Whatever ended the wait, the child is gone before its file is removed: a child
            # still writing would fill the disk again through the unlinked file.
            if child.poll() is None:
                child.kill()
                child.wait()
            if child.stdin is not None:
                child.stdin.close()
            if child.stdout is not None:
                child.stdout.close()
            with self._lock:
                self._child = None
                stopped = self._stopped
        if child.returncode != 0 and stopped:
            log.info("index %s: the reindex's build stopped: memoryd is stopping", index.new_path)
            raise RebuildFailed(STOPPED)
        if child.returncode != 0:
            why = _failed(out)
            if why is not None:  # the child said why, in its log line and to the owner
                raise RebuildFailed(f"the reindex failed and the index is as it was: {why}")
            log.error(
                "index %s: the reindex's build exited with %s", index.new_path, child.returncode
            )
            raise RebuildFailed(FAILED)
        try:
            counts = json.loads(out.decode().strip().splitlines()[-1])
            return Rebuilt(index.new_path, counts["logs"], counts["records"], counts["notes"])
        except (ValueError, IndexError, KeyError, TypeError):
            log.error("index %s: the reindex's build printed no counts", index.new_path)
            raise RebuildFailed(FAILED) from None

    def stop(self) -> None:
        """End the build in flight, if any, and refuse new ones (memoryd is stopping)."""
        with self._lock:
            self._stopped = True
            if self._child is not None and self._child.poll() is None:
                self._child.send_signal(signal.SIGTERM)


def discard(path: Path) -> None:
    """Remove the new index file at path and everything SQLite made beside it (its WAL, shared
    memory, rollback journal, and the super-journal of a transaction with the old index attached),
    so that a failed reindex leaves the home as it was. Never raises: it runs while another error
    is on its way to the owner."""
    beside = [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    with contextlib.suppress(OSError):
        beside += [p for p in path.parent.iterdir() if p.name.startswith(path.name + "-mj")]
    removed = []
    for file in beside:
        try:
            os.unlink(file)
            removed.append(file.name)
        except FileNotFoundError:
            pass
        except OSError as e:
            log.error("index %s: cannot remove what the failed reindex wrote: %s", file, e)
    if removed:
        log.info("index %s: removed what the failed reindex wrote: %s", path, ", ".join(removed))


def finish_or_discard(index: "Index", built: Rebuilt) -> tuple[int, int, int]:
    """On the writer: Index.finish_new, and when it fails (a full disk while catching the new file
    up), the new file removed before the error goes on, said in one line (RebuildFailed) when it
    is of the disk or of SQLite. A new file in place whose folder could not be synced is the
    index now (swap.NotSynced): nothing is removed, and its answer says so."""
    try:
        done = index.finish_new(built)
    except NotSynced:
        _mode_tables(index)
        raise
    except MemorydError:  # said in one line already
        discard(built.path)
        raise
    except (sqlite3.Error, OSError) as error:
        discard(built.path)
        why = _why(error, built.path)
        log.error("index %s: the reindex's catch-up failed: %s", built.path, why)
        raise RebuildFailed(f"the reindex failed and the index is as it was: {why}") from None
    except BaseException:
        discard(built.path)
        raise
    _mode_tables(index)
    return done


def _mode_tables(index: "Index") -> None:
    if index.mode_pending:  # its tables failed to build at the start: the new file has them
        index.prepare_mode()


def arguments(index: "Index") -> list[str]:
    return [
        "--home",
        str(index.home.root),
        "--mode",
        index.mode,
        "--max-class",
        index.settings.max_class,
        "--max-record-bytes",
        str(index.settings.max_record_bytes),
    ]


def _exit_with_parent() -> None:
    """Wait for the end of stdin (memoryd, the parent, is gone) and end this process at once."""
    try:
        # The descriptor itself, not sys.stdin: a daemon thread blocked in a buffered read would
        # hold its lock when the interpreter shuts down after a build that finished.
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    log.error("the reindex's build stopped: memoryd, which started it, is gone")
    os._exit(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memoryd.index.rebuild", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--max-class", required=True)
    parser.add_argument("--max-record-bytes", required=True, type=int)
    args = parser.parse_args(argv)
    configure_role()
    threading.Thread(target=_exit_with_parent, name="rebuild-parent", daemon=True).start()
    home = Home(args.home)
    settings = Settings(max_class=args.max_class, max_record_bytes=args.max_record_bytes)
    try:
        built = newindex.build(home, settings, args.mode, home.index_db)
    except (sqlite3.Error, OSError, MemorydError) as e:
        # Said in one line here and handed to memoryd, which puts it in the owner's answer: a
        # full disk or a file in the way is the owner's to mend, and no traceback says so.
        why = _why(e, home.index_db)
        log.error("index %s: the reindex's build failed: %s", newindex.new_path(home.index_db), why)
        print(json.dumps({"failed": why}))
        return 1
    print(json.dumps({"logs": built.logs, "records": built.records, "notes": built.notes}))
    return 0


def _why(error: BaseException, path: Path) -> str:
    """The cause of a failed build in words: SQLite's disk and access errors as the index says
    them elsewhere (dbfile.unwritable), a file error with the file it names."""
    wrong = unwritable(error, path)
    if wrong is not None:
        return f"{wrong[0]} (try again {wrong[1]})"
    if isinstance(error, sqlite3.Error):
        return f"SQLite: {error}"
    if isinstance(error, OSError) and not isinstance(error, MemorydError) and error.strerror:
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror}"
    return str(error)


def _failed(out: bytes) -> str | None:
    """The cause the child gave for a failed build (its last line), if it gave one."""
    try:
        said = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    why = said.get("failed") if isinstance(said, dict) else None
    return why if isinstance(why, str) and why else None


if __name__ == "__main__":
    sys.exit(main())
