"""bxctl's long waits (reindex, backup, export, import, forget): a memoryd that has stopped (a
SIGSTOP, a hang) is found by the probe bxctl sends on a second connection and said in seconds,
with what the request sent may have left; one that is working, however long, is waited for, as
memoryd's event loop answers the probe while its workers reindex."""

import asyncio
import json
import socket
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bxctl import reach
from bxctl.cli import app
from memoryd.home import Home
from proto.client import request_raw
from proto.messages import MemoryAdmin, MemoryAdminReply, Reindex, Reindexed
from proto.server import serve_unix
from tests.memoryd_process import MemorydProcess

runner = CliRunner()


@pytest.fixture
def quick(monkeypatch):
    """The watch's pauses cut to fractions of a second, so that a test takes no half minute."""
    monkeypatch.setattr(reach, "WATCH_EVERY", 0.1)
    monkeypatch.setattr(reach, "PROBE_TIMEOUT", 0.3)
    monkeypatch.setattr(reach, "SILENT_LIMIT", 1.0)


def socket_of(home: Path) -> Path:
    path = home / "run" / "owner-memory" / "admin.sock"
    path.parent.mkdir(parents=True)
    (home / "backups").mkdir()
    return path


@pytest.fixture
def stopped(tmp_path):
    """A socket whose memoryd is stopped: the kernel queues connections, nobody answers."""
    home = tmp_path / "home"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_of(home)))
    listener.listen(64)
    yield home
    listener.close()


LONG_ONES = [
    (["reindex"], "reindex"),
    (["memory", "backup"], "backup"),
    (["memory", "export"], "export"),
    (["memory", "forget", "note:0", "--yes"], "forget"),
    (["memory", "import", "IMPORT"], "import"),
]


@pytest.mark.parametrize(("argv", "change"), LONG_ONES)
def test_a_stopped_memoryd_is_said_in_seconds_with_what_may_stand(
    quick, stopped, tmp_path, argv, change
):
    export = tmp_path / "export.jsonl"
    export.write_text('{"format": 1}\n')
    argv = [str(export) if a == "IMPORT" else a for a in argv]
    started = time.monotonic()
    result = runner.invoke(app, argv, env={"BOXMAKER_HOME": str(stopped)})
    took = time.monotonic() - started
    assert result.exit_code == 3, (result.output, result.exception)
    [line] = result.stderr.splitlines()
    assert line.startswith("bxctl: memoryd stopped answering on "), line
    assert f"the {change} it was sent may have been applied or may still be" in line, line
    assert took < 10, took


# The index state of a memoryd that left no session log out (stats' "index").
IDLE_STATE = {"left_aside_total": 0, "not_indexed_total": 0}


class Busy:
    """memoryd at work on a long request: the answer comes after `takes` seconds; the probe is
    answered meanwhile (serve_unix refuses its body at once)."""

    def __init__(self, path: Path, takes: float):
        self.path, self.takes = path, takes

    async def handle(self, message):
        if isinstance(message, MemoryAdmin) and message.command == "stats":  # after a reindex
            return MemoryAdminReply(text=json.dumps({"index": IDLE_STATE}))
        await asyncio.sleep(self.takes)
        if isinstance(message, Reindex):
            return Reindexed(logs=1, records=2, notes=3)
        return MemoryAdminReply(text=json.dumps({"message": "wrote it", "path": "x"}))


@pytest.fixture
def busy(tmp_path):
    home = tmp_path / "home"
    fake = Busy(socket_of(home), takes=3.0)
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        serve_unix(fake.path, fake.handle, {"reindex", "memory_admin"}, name="fake")
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield home
    loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def test_a_memoryd_at_work_longer_than_the_silence_allowed_is_waited_for(quick, busy):
    result = runner.invoke(app, ["reindex"], env={"BOXMAKER_HOME": str(busy)})
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stdout == "reindexed: 1 log, 2 records, 3 notes\n"


# 64 descriptors leave the owner socket one connection, the reindex's own: the probe is
# answered all the same (a busy refusal), not queued behind the reindex it vouches for.
@pytest.mark.parametrize("nofile", [None, 64])
def test_memoryd_answers_the_probe_while_it_reindexes(tmp_path, monkeypatch, nofile):
    memoryd = MemorydProcess(tmp_path, nofile=nofile)
    home = Home(memoryd.home)
    for s in range(50):
        path = home.session_log(f"s{s}")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            for i in range(2000):
                text = f"the launch window moved to Thursday, log {s} record {i}"
                record = {"type": "user", "time": "2026-09-20T14:02:11Z", "content": text}
                f.write(json.dumps(record) + "\n")
    memoryd.start(timeout=120)
    took: list[float] = []

    def probe(*args, **kwargs):
        started = time.monotonic()
        try:
            return request_raw(*args, **kwargs)
        except Exception:
            took.append(float("inf"))  # unanswered
            raise
        finally:
            took.append(time.monotonic() - started)

    monkeypatch.setattr(reach, "request_raw", probe)
    monkeypatch.setattr(reach, "WATCH_EVERY", 0.02)
    monkeypatch.setattr(reach, "PROBE_TIMEOUT", 5.0)
    monkeypatch.setattr(reach, "SILENT_LIMIT", 5.0)
    try:
        result = runner.invoke(app, ["reindex"], env={"BOXMAKER_HOME": str(memoryd.home)})
    finally:
        memoryd.stop()
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stdout == "reindexed: 50 logs, 100,000 records, 0 notes\n"
    assert took, "the reindex ended before a probe was sent"
    assert max(took) < 1.0, took  # answered at once, not after the reindex
    if nofile is not None:
        assert "connection caps cut to loopd 1, brokerd 1, owner 1" in memoryd.log.read_text()
