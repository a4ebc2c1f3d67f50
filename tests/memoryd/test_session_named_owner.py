"""A session whose id is "owner" (a valid session id) may not write memory: the journal names the
owner's own edits session "owner", and `bxctl memory log` and `show` print only that name, so its
write would read as the owner's. Its log is still indexed and recalled as any session's, and its
recalls answered. memoryd as a process, bxctl as the owner runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.errors import MalformedCall
from memoryd.trust.caller import OWNERS_NAME, Caller, OwnersName
from proto.client import request
from proto.messages import MemoryCall, ToolRequest, ToolResponse
from proto.records import UserRecord, append_session_record
from tests.memoryd_process import MemorydProcess

BXCTL = Path(sys.executable).parent / "bxctl"
T = "2026-12-06T04:00:00Z"


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path)
    try:
        yield proc
        proc.stop()
    finally:
        proc.kill()  # one that did not stop on SIGTERM is not left running


def call(proc: MemorydProcess, session: str, tool: str, arguments: dict) -> ToolResponse:
    req = ToolRequest(session=session, call_id="c1", tool=tool, arguments=json.dumps(arguments))
    message = MemoryCall(request=req, taint="private", untrusted=False)
    return request(proc.broker_socket, message, 30, reply=ToolResponse)


def bxctl(proc: MemorydProcess, *args: str) -> str:
    env = {**os.environ, "BOXMAKER_HOME": str(proc.home)}
    done = subprocess.run(
        [str(BXCTL), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("file", ["memory", "user"])
def test_a_session_named_owner_is_refused_and_nothing_is_journalled(memoryd, file):
    memoryd.start()
    before = (memoryd.home / "memory" / f"{file}.md").read_bytes()

    refused = call(memoryd, "owner", "memory", {"action": "add", "file": file, "text": "Hi."})

    assert not refused.ok and refused.output == OWNERS_NAME
    assert "\n" not in refused.output
    assert (memoryd.home / "memory" / f"{file}.md").read_bytes() == before
    assert " owner " not in bxctl(memoryd, "memory", "log")
    assert "session owner: memory call c1 refused: " in memoryd.log.read_text()
    # Another session writes as before, and log names it.
    added = call(memoryd, "s-other", "memory", {"action": "add", "file": file, "text": "Hi."})
    assert added.ok, added.output
    listed = bxctl(memoryd, "memory", "log")
    assert " s-other " in listed and " owner " not in listed


def test_a_log_of_session_owner_is_indexed_and_its_recalls_answered(memoryd):
    folder = memoryd.home / "sessions" / "owner"
    folder.mkdir(parents=True, mode=0o700)
    append_session_record(folder / "0.jsonl", UserRecord(time=T, content="the kestrel nests"))
    memoryd.start()

    for session in ("s-other", "owner"):
        found = call(memoryd, session, "recall", {"query": "kestrel", "k": 5})
        assert found.ok, found.output
        assert "session owner, 2026-12-06 04:00 UTC" in found.output
    assert "kestrel" in bxctl(memoryd, "memory", "search", "kestrel")


def test_checked_refuses_the_owners_name_and_only_it():
    with pytest.raises(OwnersName) as refused:
        Caller.checked("owner", "c1", "private", False)
    assert isinstance(refused.value, MalformedCall) and str(refused.value) == OWNERS_NAME
    for near in ("Owner", "owner-1", "s-owner"):
        assert Caller.checked(near, "c1", "private", False).session == near
