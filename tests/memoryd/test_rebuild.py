"""A reindex's build runs in a child process (rebuild.py): the same index as a build in process,
and a build that fails or is stopped leaves the index as it was and says so."""

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from memoryd.config import load
from memoryd.errors import MemorydError, RebuildFailed
from memoryd.home import Home
from memoryd.index import rebuild
from memoryd.index.index import Index
from memoryd.index.rebuild import Rebuilder
from memoryd.server import prepare
from proto.messages import Reindex
from tests.memoryd.test_scheduling import _call, _config, _log


def _rows(path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT s.session, s.record, s.kind, h.text FROM sources s JOIN hits h"
            " ON h.rowid = s.rowid ORDER BY s.rowid"
        ).fetchall()
    finally:
        conn.close()


def test_the_child_builds_what_a_build_in_process_builds(tmp_path):
    home = tmp_path / "home"
    _log(home, "s-one", ["the alpha launch is on Thursday", "kestrel nests on the roof"])
    _log(home, "s-two", ["the heron came back"])
    service = prepare(load(_config(tmp_path)))
    try:
        service.index.catch_up_all()
        built = Rebuilder().build(service.index)
        in_child = _rows(built.path)
        os.replace(built.path, tmp_path / "child.sqlite3")
        in_process = service.index.build_new()
        assert (built.logs, built.records) == (in_process.logs, in_process.records) == (2, 3)
        assert in_child == _rows(in_process.path)
        assert len(in_child) == 3
    finally:
        service.close()


def test_the_build_runs_in_another_process(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel"])
    service = prepare(load(_config(tmp_path)))
    pids = []
    real_popen = rebuild.subprocess.Popen

    def popen(*args, **kwargs):
        child = real_popen(*args, **kwargs)
        pids.append(child.pid)
        return child

    monkeypatch.setattr(rebuild.subprocess, "Popen", popen)
    try:
        reply = asyncio.run(service.on_admin(Reindex()))
    finally:
        service.close()
    assert (reply.logs, reply.records) == (1, 1)
    assert len(pids) == 1 and pids[0] != os.getpid()


@pytest.mark.parametrize(
    "argv",
    [
        ["-c", "import sys; sys.exit(3)"],  # the child fails
        ["-c", "print('no counts here')"],  # the child says nothing memoryd can read
        ["-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],  # killed
    ],
)
def test_a_failed_build_fails_the_reindex_and_keeps_the_index(tmp_path, monkeypatch, argv):
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel nests on the roof"])
    service = prepare(load(_config(tmp_path)))
    monkeypatch.setattr(rebuild, "arguments", lambda index: [])
    real_popen = rebuild.subprocess.Popen
    monkeypatch.setattr(
        rebuild.subprocess,
        "Popen",
        lambda command, **kw: real_popen([command[0], *argv], **kw),
    )

    async def scenario():
        await service.catch_up()
        with pytest.raises(MemorydError) as refused:
            await service.on_admin(Reindex())
        found = await service.on_broker(_call("recall", {"query": "kestrel"}))
        return refused.value, found

    try:
        refused, found = asyncio.run(scenario())
    finally:
        service.close()
    assert isinstance(refused, RebuildFailed)
    assert str(refused) == rebuild.FAILED
    assert found.output.startswith("[1] ")  # the old index still answers


def test_stop_ends_a_build_in_flight_and_refuses_the_next(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel"])
    index = Index(Home(home))
    rebuilder = Rebuilder()
    real_popen = rebuild.subprocess.Popen
    started = threading.Event()
    children = []

    def popen(command, **kw):
        children.append(real_popen([command[0], "-c", "import time; time.sleep(60)"], **kw))
        started.set()
        return children[-1]

    monkeypatch.setattr(rebuild.subprocess, "Popen", popen)
    outcome: list[BaseException] = []

    def run():
        try:
            rebuilder.build(index)
        except RebuildFailed as e:
            outcome.append(e)

    thread = threading.Thread(target=run)
    began = time.monotonic()
    thread.start()
    assert started.wait(10)
    rebuilder.stop()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - began < 10
    assert len(outcome) == 1
    assert children[0].returncode == -signal.SIGTERM
    with pytest.raises(RebuildFailed):
        rebuilder.build(index)
    assert len(children) == 1  # no child started after stop


PARENT = """
import subprocess, sys, time
child = subprocess.Popen(
    [sys.executable, "-c", "import threading, time\\n"
     "from memoryd.index.rebuild import _exit_with_parent\\n"
     "threading.Thread(target=_exit_with_parent, daemon=True).start()\\n"
     "time.sleep(60)"],
    stdin=subprocess.PIPE,
)
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_build_never_outlives_memoryd_killed_with_sigkill():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE)
    try:
        child = int(parent.stdout.readline())
        time.sleep(0.5)
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        parent.kill()
        parent.wait()


def _rebuilder_running(monkeypatch, argv: list[str]) -> Rebuilder:
    real_popen = rebuild.subprocess.Popen
    monkeypatch.setattr(rebuild, "arguments", lambda index: [])
    monkeypatch.setattr(
        rebuild.subprocess, "Popen", lambda command, **kw: real_popen([command[0], *argv], **kw)
    )
    return Rebuilder()


def test_only_the_tail_of_a_long_output_is_kept_and_its_last_line_counts(tmp_path, monkeypatch):
    index = Index(Home(tmp_path / "home"))
    script = 'print(\'x\' * 5_000_000); print(\'{"logs": 2, "records": 7, "notes": 1}\')'
    built = _rebuilder_running(monkeypatch, ["-c", script]).build(index)
    assert (built.logs, built.records, built.notes) == (2, 7, 1)
    assert built.path == index.new_path


def test_no_process_to_be_had_fails_the_reindex(tmp_path, monkeypatch, caplog):
    index = Index(Home(tmp_path / "home"))

    def refused(*args, **kwargs):
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(rebuild.subprocess, "Popen", refused)
    with pytest.raises(RebuildFailed):
        Rebuilder().build(index)
    assert "the reindex's build cannot start" in caplog.text


# A child that writes what a build writes beside the index (the new file, its rollback journal and
# WAL, a super-journal), then ends in one of the ways a build can end without finishing.
WRITES = (
    "import os, sys, signal, time\n"
    "new = sys.argv[1]\n"
    "for name in (new, new + '-journal', new + '-wal', new + '-mj0A1B2C3D'):\n"
    "    with open(name, 'wb') as f:\n"
    "        f.write(b'x' * 40000)\n"
    "print('written', flush=True)\n"
)
ENDINGS = {
    "exits with an error": "sys.exit(1)",
    "raises": "raise OSError(28, 'No space left on device')",
    "kills itself": "os.kill(os.getpid(), signal.SIGKILL)",
    "prints no counts": "print('no counts here')",
    "prints broken counts": "print('{\"logs\": 1')",
}


def _index_dir(index: Index) -> dict[str, int]:
    folder = index.path.parent
    return {p.name: p.stat().st_size for p in folder.iterdir()} if folder.is_dir() else {}


def _opened_index(tmp_path) -> Index:
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel nests on the roof"])
    index = Index(Home(home))
    index.open()
    index.catch_up_all()
    return index


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_failed_build_leaves_nothing_it_wrote(tmp_path, monkeypatch, ending):
    index = _opened_index(tmp_path)
    try:
        before = _index_dir(index)
        argv = ["-c", WRITES + ENDINGS[ending], str(index.new_path)]
        with pytest.raises(RebuildFailed):
            _rebuilder_running(monkeypatch, argv).build(index)
        assert _index_dir(index) == before
        assert not any(name.startswith("memory.sqlite3.new") for name in _index_dir(index))
    finally:
        index.close()


def test_a_build_stopped_midway_leaves_nothing_it_wrote(tmp_path, monkeypatch):
    """memoryd stopping (or anything that ends the wait) kills the child before its files go, so
    no child goes on writing into a file already removed."""
    index = _opened_index(tmp_path)
    try:
        before = _index_dir(index)
        # The child keeps writing until it is stopped: its files must not come back after.
        argv = [
            "-c",
            WRITES + "while True:\n    open(new, 'ab').write(b'y' * 4096); time.sleep(0.01)\n",
            str(index.new_path),
        ]
        rebuilder = _rebuilder_running(monkeypatch, argv)
        outcome: list[BaseException] = []

        def run() -> None:
            try:
                rebuilder.build(index)
            except RebuildFailed as e:
                outcome.append(e)

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 10
        while not index.new_path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert index.new_path.exists()
        rebuilder.stop()
        thread.join(10)
        assert not thread.is_alive() and len(outcome) == 1
        time.sleep(0.1)
        assert _index_dir(index) == before
    finally:
        index.close()


def test_a_catch_up_that_fails_after_the_build_removes_the_new_file(tmp_path, monkeypatch):
    """The build finished, then catching the new file up on the writer failed (a full disk): the
    reindex fails, the new file is gone, the old index answers and later writes go on."""
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel nests on the roof"])
    service = prepare(load(_config(tmp_path)))
    real_finish = service.index.finish_new
    seen = []

    def full(built):
        seen.append(built.path.exists())
        with open(built.path, "ab") as f:
            f.write(b"\0" * 100_000)
        raise sqlite3.OperationalError("database or disk is full")

    async def scenario():
        await service.catch_up()
        before = _index_dir(service.index)
        monkeypatch.setattr(service.index, "finish_new", full)
        with pytest.raises(RebuildFailed) as refused:  # one line, not "internal error"
            await service.on_admin(Reindex())
        assert str(refused.value) == (
            "the reindex failed and the index is as it was: SQLite: database or disk is full"
        )
        after = _index_dir(service.index)
        found = await service.on_broker(_call("recall", {"query": "kestrel"}))
        note = await service.on_broker(_call("memory", {"action": "note", "text": "heron"}, "c2"))
        monkeypatch.setattr(service.index, "finish_new", real_finish)
        again = await service.on_admin(Reindex())
        return before, after, found, note, again

    try:
        before, after, found, note, again = asyncio.run(scenario())
    finally:
        service.close()
    assert seen == [True]
    assert after == before
    assert found.output.startswith("[1] ")
    assert note.ok
    assert (again.logs, again.records, again.notes) == (1, 1, 1)


def test_a_build_that_fails_says_why_in_one_line_without_a_traceback(tmp_path, capfd):
    """A cause the owner can mend (here notes.md made a link, which memoryd never follows) is
    in the answer and in one log line of the child's; "memoryd's log says why" over a
    traceback told the owner nothing."""
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel nests on the roof"])
    service = prepare(load(_config(tmp_path)))
    notes = Home(home).memory_file("notes.md")

    async def scenario():
        await service.catch_up()
        notes.unlink()
        notes.symlink_to("/etc/hostname")
        with pytest.raises(MemorydError) as refused:
            await service.on_admin(Reindex())
        return refused.value

    try:
        refused = asyncio.run(scenario())
    finally:
        service.close()
    said = str(refused)
    assert isinstance(refused, RebuildFailed)
    assert said.startswith("the reindex failed and the index is as it was: "), said
    assert str(notes) in said and "symbolic link" in said, said
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert "the reindex's build failed: " in err
