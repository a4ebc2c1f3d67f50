"""The whole stack as processes, loopd-shim under a real file size limit (RLIMIT_FSIZE, as
`ulimit -f` or systemd's LimitFSIZE= set it): a memory write memoryd applies is never answered
as failed because the session log could not take its result, and no write runs for a turn whose
log cannot take a line for each call.
"""

import json
import os
import resource
import subprocess

import pytest

from loopd_shim import logroom
from proto.client import RemoteError, request
from proto.messages import AssistantMessage, SessionStart, ToolCall
from proto.records import AssistantRecord, now_rfc3339, read_records
from tests.integration.stack import ProcessStack, short_temp_home, venv_command

LIMIT = 1024 * 1024  # the file size limit loopd-shim runs under
PAGE = "<p>" + "The same line again. " * 3000 + "</p>"  # about 63 KB


@pytest.fixture
def limited_stack():
    stack = ProcessStack(short_temp_home("lsh-full-"))
    try:
        fixtures = stack.home / "fixtures"
        (fixtures / "big-page.html").write_text(PAGE)
        with open(fixtures / "index.toml", "a") as f:
            f.write(
                '\n[[fixture]]\ntool = "http_fetch"\n'
                'arguments = { url = "https://example.org/big" }\nfile = "big-page.html"\n'
            )
        for name in ("memoryd", "brokerd-shim"):
            stack.start_service(name)

        def limited():
            resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

        with open(stack.root / "loopd-shim.log", "ab") as log:
            stack.processes["loopd-shim"] = subprocess.Popen(
                [
                    venv_command("loopd-shim"),
                    "serve",
                    "--config",
                    os.fspath(stack.configs / "loopd.toml"),
                ],
                env={**os.environ, "BOXMAKER_HOME": os.fspath(stack.home)},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=limited,
            )
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


def filled(stack, session: str, calls: list[ToolCall], room: int):
    """Start session and fill its log with owner records so that room bytes are left past
    the assistant record of calls."""
    request(stack.control_socket, SessionStart(session=session))
    log = stack.home / "sessions" / session / "0.jsonl"
    need = logroom.line_bytes(AssistantRecord(time=now_rfc3339(), tool_calls=calls))
    target = LIMIT - need - room
    empty = len(json.dumps({"type": "user", "time": now_rfc3339(), "content": ""}) + "\n")
    with open(log, "a") as f:
        while f.tell() + 2 * empty + 8192 < target:
            f.write(
                json.dumps({"type": "user", "time": now_rfc3339(), "content": "x" * 8000}) + "\n"
            )
        f.write(
            json.dumps(
                {
                    "type": "user",
                    "time": now_rfc3339(),
                    "content": "y" * (target - f.tell() - empty),
                }
            )
            + "\n"
        )
    assert log.stat().st_size == target
    return log


def note(text: str) -> ToolCall:
    return ToolCall(id="m1", name="memory", arguments=json.dumps({"action": "note", "text": text}))


def test_a_full_session_log_never_hides_an_applied_memory_write(limited_stack):
    stack = limited_stack
    notes = stack.home / "memory" / "notes.md"
    # Room for the assistant record only: refused before the write is sent.
    calls = [note("The boiler code is 7741.")]
    log = filled(stack, "s-full", calls, 40)
    size = log.stat().st_size
    with pytest.raises(RemoteError, match="the turn was not recorded, and no call of it ran"):
        request(stack.control_socket, AssistantMessage(session="s-full", tool_calls=calls))
    assert log.stat().st_size == size
    assert "7741" not in (notes.read_text() if notes.exists() else "")

    # Room for the note's result and a line for the fetch, not for the page fetched.
    fetch = ToolCall(id="f1", name="http_fetch", arguments='{"url": "https://example.org/big"}')
    calls = [note("The gate code is 2208."), fetch]
    room = sum(logroom.reserve(call) for call in calls) + 2000
    log = filled(stack, "s-page", calls, room)
    reply = request(stack.control_socket, AssistantMessage(session="s-page", tool_calls=calls))
    noted, fetched = reply.results
    assert noted.ok and "[the session log could not" not in noted.output
    assert "2208" in notes.read_text()
    assert fetched.ok and fetched.output.startswith(
        "[the session log could not record this result (File too large): the call ran and this"
        " is its answer; the log holds a line saying it ran]\n<p>The same line again."
    )
    records = [line.record for line in read_records(log)][-3:]
    assert [r.type for r in records] == ["assistant", "tool_result", "tool_result"]
    assert (records[1].call_id, records[1].output) == ("m1", noted.output)
    assert (records[2].call_id, records[2].klass, records[2].untrusted) == ("f1", "private", True)
    assert records[2].output.startswith("[the call ran (ok, ")
