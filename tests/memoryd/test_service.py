"""memoryd as a service, in-process: every message kind on its socket, and bad requests by the
hundred without a change on disk."""

import asyncio
import hashlib
import json
import os
import stat
import struct
import threading
from pathlib import Path

import msgpack
import pytest

from memoryd.config import load
from memoryd.server import prepare, run
from proto.client import RemoteError, request
from proto.frames import MAX_FRAME
from proto.messages import (
    MemoryAdmin,
    MemoryBlock,
    MemoryCall,
    Ok,
    Reindex,
    SessionUpdated,
    ToolRequest,
)
from proto.records import AssistantRecord, ToolResultRecord, UserRecord, append_session_record
from tests.rawsocket import send_raw as raw

T = "2026-09-20T14:02:11Z"
SOUL = "You are a careful personal agent.\n"


class Running:
    def __init__(self, home: Path, config: Path):
        self.home = home
        self.cfg = load(config)
        self.loop = asyncio.new_event_loop()
        self.ready = asyncio.Event()
        self.service = prepare(self.cfg)
        self.task = None
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.started.wait(10)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(run(self.cfg, self.service, self.ready))
        self.loop.create_task(self._signal())
        self.loop.run_until_complete(asyncio.gather(self.task, return_exceptions=True))

    async def _signal(self):
        await self.ready.wait()
        self.started.set()

    def stop(self):
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(10)

    def call(
        self,
        tool: str,
        args: dict,
        session="s-clean",
        taint="private",
        untrusted=False,
        call_id="c1",
    ):
        req = ToolRequest(session=session, call_id=call_id, tool=tool, arguments=json.dumps(args))
        return request(
            self.cfg.broker_socket, MemoryCall(request=req, taint=taint, untrusted=untrusted)
        )

    def admin(self, command: str, arg: str = ""):
        return request(self.cfg.admin_socket, MemoryAdmin(command=command, arg=arg)).text


@pytest.fixture
def memoryd(tmp_path):
    home = tmp_path / "home"
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{home}"\n')
    running = Running(home, config)
    # The start's catch-up (of no log here) ends before the tests ask: a recall made during it
    # carries a line saying how far it is, which no test of this fixture is about.
    running.service.caught_up.wait(20)
    yield running
    running.stop()


def write_log(home: Path, session: str, records) -> None:
    folder = home / "sessions" / session
    folder.mkdir(parents=True, exist_ok=True)
    for r in records:
        append_session_record(folder / "0.jsonl", r)


def test_sockets_and_files_have_their_modes(memoryd):
    cfg = memoryd.cfg
    for path in (cfg.loop_socket, cfg.broker_socket, cfg.admin_socket):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    for name in ("soul.md", "memory.md", "user.md", "notes.md"):
        assert stat.S_IMODE(os.stat(memoryd.home / "memory" / name).st_mode) == 0o600
    assert (memoryd.home / "memory" / "soul.md").read_text() == SOUL
    assert stat.S_IMODE(os.stat(memoryd.home / "index" / "memory.sqlite3").st_mode) == 0o600


def test_block_add_recall_undo_round_trip(memoryd):
    block = request(memoryd.cfg.loop_socket, MemoryBlock()).text
    assert block.startswith("# soul.md\nYou are a careful personal agent.")
    assert "# memory.md (0 of 2,200 characters)\n(empty)" in block

    reply = memoryd.call("memory", {"action": "add", "file": "memory", "text": "Owner likes UTC."})
    assert reply.ok and reply.output.startswith("memory.md updated (16 of 2,200 characters)")
    assert reply.label is None
    assert "Owner likes UTC." in request(memoryd.cfg.loop_socket, MemoryBlock()).text

    noted = memoryd.call(
        "memory",
        {"action": "note", "text": "The launch moved to Thursday."},
        untrusted=True,
        session="s-dirty",
    )
    assert noted.ok and noted.output == "noted (untrusted)"
    found = memoryd.call("recall", {"query": "launch thursday"})
    assert found.ok and "memory-tainted" in found.output and "Thursday" in found.output
    assert found.label.untrusted is True

    log = memoryd.admin("log", "5")
    assert "add" in log and "s-clean" in log
    edit_id = next(w for w in log.split() if w.count("-") == 3 and w[:4].isdigit())
    memoryd.admin("undo", edit_id)
    assert "Owner likes UTC." not in (memoryd.home / "memory" / "memory.md").read_text()


def test_refused_write_is_a_failed_tool_response(memoryd):
    reply = memoryd.call("memory", {"action": "remove", "file": "memory", "old": "absent"})
    assert reply.ok is False and reply.output
    reply = memoryd.call("memory", {"action": "add", "file": "memory", "text": "x"}, untrusted=True)
    assert reply.ok is True and reply.output.startswith("saved as a note (untrusted)")
    reply = memoryd.call("memory", {"action": "add", "file": "memory"})
    assert reply.ok is False and "text" in reply.output
    reply = memoryd.call("http_fetch", {"url": "x"})
    assert reply.ok is False


def test_session_updated_indexes_new_records(memoryd):
    write_log(memoryd.home, "mm-1", [UserRecord(time=T, content="the zebra crossing is closed")])
    assert request(memoryd.cfg.loop_socket, SessionUpdated(session="mm-1")) == Ok()
    found = memoryd.call("recall", {"query": "zebra"})
    assert "the owner said" in found.output and "zebra" in found.output
    with pytest.raises(RemoteError):
        request(memoryd.cfg.loop_socket, SessionUpdated(session="mm-none"))


def test_reindex_counts(memoryd):
    write_log(
        memoryd.home,
        "mm-2",
        [
            UserRecord(time=T, content="fetch the page"),
            AssistantRecord(
                time=T,
                tool_calls=[
                    {"id": "c", "name": "http_fetch", "arguments": '{"url":"https://example.org"}'}
                ],
            ),
            ToolResultRecord.model_validate(
                {
                    "type": "tool_result",
                    "time": T,
                    "call_id": "c",
                    "name": "http_fetch",
                    "output": "page",
                    "class": "private",
                    "untrusted": True,
                }
            ),
            AssistantRecord(time=T, content="it says March"),
        ],
    )
    memoryd.call("memory", {"action": "note", "text": "remember the page"})
    reply = request(memoryd.cfg.admin_socket, Reindex(), timeout=60)
    assert (reply.logs, reply.records, reply.notes) == (1, 3, 1)


def tree_digest(root: Path) -> dict:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "recalls" not in path.parts:
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def frame(kind, body) -> bytes:
    payload = msgpack.packb({"kind": kind, "body": body}, use_bin_type=True)
    return struct.pack(">I", len(payload)) + payload


BAD = [
    struct.pack(">I", MAX_FRAME + 1),
    struct.pack(">I", 0),
    struct.pack(">I", 40) + b"short",
    struct.pack(">I", 3) + b"\xc1\xc1\xc1",
    frame("drop_table", {}),
    frame("memory_block", {"extra": 1}),
    frame("session_updated", {"session": "../../etc"}),
    frame("session_updated", {"session": "no-such-session"}),
    frame(
        "memory_call",
        {
            "request": {"session": "s", "call_id": "c", "tool": "memory", "arguments": "{not json"},
            "taint": "private",
            "untrusted": False,
        },
    ),
    frame(
        "memory_call",
        {
            "request": {
                "session": "s",
                "call_id": "c",
                "tool": "memory",
                "arguments": '{"action":"add","file":"soul","text":"x"}',
            },
            "taint": "private",
            "untrusted": False,
        },
    ),
    frame("memory_admin", {"command": "undo", "arg": "../../x"}),
    frame("memory_admin", {"command": "accept", "arg": "nope"}),
    frame("memory_admin", {"command": "log", "arg": "-1"}),
    frame("reindex", {"x": 1}),
    b"\x00",
    b"",
]


def test_hundreds_of_bad_requests_change_nothing(memoryd):
    memoryd.call("memory", {"action": "add", "file": "user", "text": "Owner is Ada."})
    before = tree_digest(memoryd.home / "memory")
    sockets = [memoryd.cfg.loop_socket, memoryd.cfg.broker_socket, memoryd.cfg.admin_socket]
    answered = 0
    for i in range(300):
        reply = raw(sockets[i % 3], BAD[i % len(BAD)])
        answered += bool(reply)
    # A slow client that never finishes its frame is dropped; the server still answers others.
    assert answered > 200
    assert tree_digest(memoryd.home / "memory") == before
    assert "Owner is Ada." in request(memoryd.cfg.loop_socket, MemoryBlock()).text
