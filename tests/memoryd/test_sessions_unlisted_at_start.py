"""sessions/ is loopd's, read by memoryd only to index: when memoryd cannot list it at a start (its
mode, its owner after a copy or a chown; a file or a FIFO in its place), memoryd starts all the
same, says so once naming sessions/ and why (never "cannot open the index", which stays for the
index itself), serves what the index holds, and lists sessions/ again until it can, catching up
its logs then without a restart. memoryd is run as its own user would run it (root without the
override of file permissions), over its real sockets; the file case in-process on a real loop."""

import asyncio
import json
import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

from memoryd import catchup
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.owner import indexstate
from proto.client import request
from proto.messages import (
    MemoryAdmin,
    MemoryAdminReply,
    MemoryBlock,
    MemoryBlockReply,
    MemoryCall,
    ToolRequest,
    ToolResponse,
)
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_catch_up_again import said_meanwhile, until
from tests.memoryd.test_index import write_log
from tests.memoryd.test_index_access import closed_folder  # noqa: F401 - a fixture
from tests.memoryd.test_scheduling import _config

OLD = "the purplefrog lawyer is Smith"
NEW = "the bluewhale doctor is Jones"


def _recall(home: Home, query: str) -> str:
    req = ToolRequest(
        session="mm-reader01",
        call_id="c1",
        tool="recall",
        arguments=json.dumps({"query": query}),
    )
    call = MemoryCall(request=req, taint="private", untrusted=False)
    return request(home.run / "broker-memory/memory.sock", call, reply=ToolResponse).output


def _started(serving: subprocess.Popen, log: Path, home: Home) -> bool:
    """True once memoryd listens and its start's catch-up ended; False when it exited."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if serving.poll() is not None:
            return False
        admin = home.run / "owner-memory/admin.sock"
        if admin.exists() and ": caught up, " in log.read_text():
            return True
        time.sleep(0.05)
    raise AssertionError(f"memoryd did not start: {log.read_text()}")


def test_sessions_closed_at_start_serves_and_is_caught_up_once_open(tmp_path, closed_folder):  # noqa: F811
    preexec, close = closed_folder
    config = _config(tmp_path)
    home = Home(tmp_path / "home")
    write_log(home, "mm-sess0001", [OLD])
    index = Index(home)
    index.open()
    index.catch_up_all()  # what an earlier run of memoryd indexed
    index.close()
    close(home.sessions)
    log = tmp_path / "memoryd.log"
    serve = [sys.executable, "-m", "memoryd", "serve", "--config", str(config)]
    with open(log, "w") as out:
        serving = subprocess.Popen(serve, preexec_fn=preexec, stdout=out, stderr=out)
    try:
        assert _started(serving, log, home), log.read_text()
        block = request(home.run / "loop-memory/memory.sock", MemoryBlock())
        assert isinstance(block, MemoryBlockReply) and "# soul.md" in block.text
        assert OLD in _recall(home, "purplefrog")  # what the index holds is served
        stats = request(
            home.run / "owner-memory/admin.sock",
            MemoryAdmin(command="stats", arg="{}"),
            reply=MemoryAdminReply,
        ).text
        assert "index: sessions/ cannot be listed (Permission denied)" in stats
        write_log(home, "mm-sess0001", [NEW])  # loopd went on writing meanwhile
        home.sessions.chmod(0o700)  # the owner mends it: no restart
        deadline = time.monotonic() + 30
        while NEW not in _recall(home, "bluewhale") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert NEW in _recall(home, "bluewhale")
    finally:
        serving.terminate()
        serving.wait(30)
    said = log.read_text()
    assert "cannot open the index" not in said and "Traceback" not in said
    warned = [line for line in said.splitlines() if " WARNING " in line and "sessions" in line]
    assert len(warned) == 1, said  # once, though stats listed it again
    assert f"{home.sessions} cannot be listed (Permission denied)" in warned[0]
    assert f"{home.sessions} can be listed again: 1 session log, 1 log to catch up" in said


def test_sessions_a_file_at_start_is_listed_again_once_a_folder(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(catchup, "RETRY_FIRST", 0.05)
    monkeypatch.setattr(catchup, "RETRY_MOST", 0.1)
    m = Memoryd(tmp_path / "home")
    try:
        said_meanwhile(m, "mm-sess0001", OLD)
        m.index.catch_up_all()
        kept = tmp_path / "kept"
        m.home.sessions.rename(kept)
        m.home.sessions.write_text("not a folder\n")

        async def scenario() -> list[str]:
            with caplog.at_level(logging.INFO, logger="memoryd"):
                await asyncio.wait_for(m.service.catch_up(), 10)  # ends, listing none
                assert m.service.caught_up.is_set()
                lines = indexstate.lines(json.loads(m.admin("stats", '{"json": true}'))["index"])
                m.home.sessions.unlink()
                shutil.move(kept, m.home.sessions)
                said_meanwhile(m, "mm-sess0002", NEW)
                assert await until(lambda: NEW in m.recall("bluewhale"))
                assert OLD in m.recall("purplefrog")
            return lines

        lines = asyncio.run(scenario())
    finally:
        m.close()
    assert lines[0].startswith("index: sessions/ is a file, not a folder: the 1 session")
    said = [r.getMessage() for r in caplog.records]
    assert any("caught up, " in s and "once sessions/ can be listed" in s for s in said), said
    assert f"{m.home.sessions} can be listed again: 2 session logs, 1 log to catch up" in said
