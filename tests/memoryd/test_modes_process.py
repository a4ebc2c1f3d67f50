"""memoryd as a subprocess in recall mode context: recall over the brokerd socket answers the
context way, the recall log names the mode, and a restart in spec mode drops the mode's tables."""

import json
import sqlite3

from memoryd.home import Home
from proto.client import request
from proto.messages import MemoryCall, ToolRequest
from tests.memoryd.test_modes_context import CONVERSATION
from tests.memoryd.test_reindex import append
from tests.memoryd_process import MemorydProcess


def recall(memoryd, query: str) -> str:
    req = ToolRequest(
        session="mm-ask", call_id="r1", tool="recall", arguments=json.dumps({"query": query})
    )
    reply = request(
        memoryd.broker_socket, MemoryCall(request=req, taint="private", untrusted=False)
    )
    assert reply.ok
    return reply.output


def test_memoryd_in_context_mode_then_back_to_spec(tmp_path):
    memoryd = MemorydProcess(tmp_path, '[recall]\nmode = "context"\n')
    append(Home(memoryd.home), "mm-talk", CONVERSATION)
    memoryd.start()
    try:
        output = recall(memoryd, "what did Caroline take to Lisbon")
    finally:
        memoryd.stop()
    assert "Yes, both of them" in output
    (log_file,) = Home(memoryd.home).recalls.iterdir()
    assert json.loads(log_file.read_text().splitlines()[-1])["mode"] == "context"
    assert "recall mode context (a new file)" in memoryd.log.read_text()

    memoryd.config.write_text(f'[paths]\nhome = "{memoryd.home}"\n')
    memoryd.start()
    try:
        output = recall(memoryd, "what did Caroline take to Lisbon")
    finally:
        memoryd.stop()
    assert "Yes, both of them" not in output
    assert "recall mode spec (was context)" in memoryd.log.read_text()
    conn = sqlite3.connect(memoryd.home / "index" / "memory.sqlite3")
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert not names & {"recall_mode", "context_hits", "context_sessions"}
